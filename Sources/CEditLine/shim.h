/* libedit (Debian: libedit-dev): the line editor of `shareflow repl`. */
#include <stdio.h>
#include <histedit.h>

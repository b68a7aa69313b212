-- A plain module of require-module-files, found as sub/init.lua (the control).
return "sub"

-- A plain module of require-module-files (the control).
return "inside"

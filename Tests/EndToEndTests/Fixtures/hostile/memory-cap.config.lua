-- memory-cap-hold's limits: a cap small enough that filling the state to it takes a few
-- milliseconds of CPU, well inside the budget even on a loaded machine. At 64 MiB the first
-- call's fill could run out of budget with the state just short of the cap; the host's next
-- push then failed before the observer ran, so it never wrote "full" (the case's precondition).
return {
  limits = { cpuMillis = 50, memoryMiB = 8 },
}

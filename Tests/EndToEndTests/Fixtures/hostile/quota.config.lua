-- append-quota-config: a 1 MiB disk quota per plugin (SPEC §8 limits.diskMiB).
return {
  limits = { cpuMillis = 50, memoryMiB = 64, diskMiB = 1 },
}

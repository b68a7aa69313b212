-- The demo's configuration: the three shipped plugins, on.
return {
  limits = { cpuMillis = 50, memoryMiB = 64 },
  plugins = {
    ["domain-allowlist"] = { domains = { "example.com" } },
    ["audit-log"] = { path = "audit.jsonl" },
    ["expiring-invitations"] = { maxAgeSeconds = 7 * 24 * 3600 },
  },
}

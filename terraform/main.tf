# sandbox-cloudrun: the Cloud Run service that runs untrusted, model-written
# JavaScript in QuickJS-on-wasm, with its runtime identity, its scripts bucket
# and a network that lets it reach Google APIs and nothing else.
#
#   main.tf     names, the environment of the service, the runtime identity
#   service.tf  the Cloud Run service and who may invoke or deploy it
#   storage.tf  the scripts bucket and its grants
#   network.tf  the egress network: subnet, route, firewall, private DNS
#
# README.md beside this file says what each hardening property is for.

locals {
  bucket_name = var.bucket_name != null ? var.bucket_name : "${var.project_id}-${var.name}-scripts"

  request_timeout_seconds = tonumber(trimsuffix(var.request_timeout, "s"))
  max_wall_clock_seconds  = tonumber(trimsuffix(var.max_wall_clock, "s"))

  # The durations of var.env that the service's start-up rules depend on, as
  # the service will read them: Go duration strings such as 500ms, 2s or 1m30s
  # (variables.tf refuses any other form), here in nanoseconds, which keeps
  # whole numbers of ms or s exact. HARD_KILL_GRACE defaults to 500ms in the
  # service; DEFAULT_WALL_CLOCK is set below unless var.env sets it.
  duration_unit_ns = { ns = 1, us = 1e3, "µs" = 1e3, "μs" = 1e3, ms = 1e6, s = 1e9, m = 60e9, h = 3600e9 }
  env_duration_ns = {
    for k in ["HARD_KILL_GRACE", "DEFAULT_WALL_CLOCK"] : k => sum(concat([0], [
      for p in regexall("([0-9]+(?:\\.[0-9]+)?|\\.[0-9]+)(ns|us|µs|μs|ms|h|m|s)", var.env[k]) :
      tonumber(p[0]) * local.duration_unit_ns[p[1]]
    ])) if contains(keys(var.env), k)
  }
  request_timeout_ns    = local.request_timeout_seconds * 1e9
  max_wall_clock_ns     = local.max_wall_clock_seconds * 1e9
  hard_kill_grace_ns    = lookup(local.env_duration_ns, "HARD_KILL_GRACE", 500e6)
  default_wall_clock_ns = lookup(local.env_duration_ns, "DEFAULT_WALL_CLOCK", min(5, local.max_wall_clock_seconds) * 1e9)

  # The scripts store: the bucket, or none in the credential-free mode, where
  # scripts arrive by value at POST /v1/sandbox/evaluate.
  store_url = var.scripts_bucket_enabled ? "gs://${google_storage_bucket.scripts[0].name}" : "none"

  # The service's own ID-token check allows the emails among the invokers.
  allowed_callers = [
    for m in var.invoker_members : split(":", m)[1]
    if startswith(m, "user:") || startswith(m, "serviceAccount:")
  ]

  # Environment of the service beyond the variables service.tf sets one by
  # one. DEFAULT_WALL_CLOCK may not exceed MAX_WALL_CLOCK.
  env = merge(
    {
      DEFAULT_WALL_CLOCK = "${min(5, local.max_wall_clock_seconds)}s"
      LOG_LEVEL          = var.log_level
      OTEL_EXPORTER      = var.otel_exporter
    },
    var.auth_audience == "" ? {} : {
      AUTH_AUDIENCE        = var.auth_audience
      AUTH_ALLOWED_CALLERS = join(",", local.allowed_callers)
    },
    var.env,
  )
}

# The identity the service runs as. It has no keys, and at most one grant: read
# access to the objects of the scripts bucket (storage.tf). In the
# credential-free mode it has none at all. Cloud Run needs some identity; without
# this one it would run as the Compute Engine default service account, which
# commonly holds Editor on the project.
resource "google_service_account" "runtime" {
  project      = var.project_id
  account_id   = "${var.name}-runtime"
  display_name = "${var.name} runtime"
  description  = "Runs the ${var.name} sandbox service. No keys; at most roles/storage.objectViewer on its scripts bucket."
}

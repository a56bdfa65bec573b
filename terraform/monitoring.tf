# The service's health in Cloud Monitoring (monitoring_enabled, on by default):
# alert policies for what needs a person, a log-based metric for the runs that
# had to be killed, and a dashboard. Cloud Run reports request counts,
# latencies and instances by itself, and Cloud Logging derives the metric from
# the service's own log lines, so the runtime identity needs no grant for any
# of it.
#
#   evaluations  the service's own log line for each evaluation, counted by
#                its outcome (ok, a limit, a problem type): the dashboard's
#                requests by outcome
#   hard kills   a run stuck in native code (a builtin that never returns to
#                the engine's interrupt check) did not stop at its deadline,
#                and its worker process was killed: one log line each
#   engine       a script broke the engine from inside (a wasm trap during
#   faults       its run): one log line each, an alarm on the first
#   usage        what each run used, from the same line (docs/spi.md,
#                "Usage"): its CPU time, its run and set-up time, its peak
#                heap and the fractions of its memory limit and CPU budget;
#                distributions, plotted as percentiles on the dashboard
#   start-up     a revision whose instances fail to start or that never
#                becomes ready: the platform's log lines of a failed startup
#                probe or a revision whose Ready condition turned False, and
#                the service's own start-up failures
#   5xx ratio    answers the service (or Cloud Run) could not give
#   429 ratio    requests refused because every instance was busy
#   p99 latency  slow answers, from scripts or from queueing
#   bulk job     with bulk_job.enabled, the job's tasks on the same
#                dashboard: their inputs by outcome, from the evaluation line
#                each task writes for each input, their task attempts by
#                result and running, from Cloud Run's job metrics, and their
#                engine faults, which the engine-fault alert also watches
#
# The messages and the jsonPayload fields the log filters below read are the
# service's log interface: deploy's TestLogFiltersReadWhatTheServiceWrites
# holds each to a line the service writes, as the Go package that writes it
# describes it.

locals {
  monitoring = var.monitoring_enabled ? 1 : 0

  alert_p99_latency_ms = coalesce(var.alert_p99_latency_ms, min(10000, local.request_timeout_seconds * 500))

  # Channel IDs become full names; full names stay as they are.
  notification_channels = [
    for c in var.notification_channels :
    startswith(c, "projects/") ? c : "projects/${var.project_id}/notificationChannels/${c}"
  ]

  # The time series of this service's revisions.
  run_revision = "resource.type=\"cloud_run_revision\" AND resource.labels.service_name=\"${var.name}\""
  requests     = "metric.type=\"run.googleapis.com/request_count\" AND ${local.run_revision}"
  latencies    = "metric.type=\"run.googleapis.com/request_latencies\" AND ${local.run_revision}"
  instances    = "metric.type=\"run.googleapis.com/container/instance_count\" AND ${local.run_revision}"

  # The line the service logs, at ERROR, each time it kills the worker process
  # of a run that did not stop at its deadline (the instance lives on).
  hard_kill_log_filter = join(" AND ", [
    "resource.type=\"cloud_run_revision\"",
    "resource.labels.service_name=\"${var.name}\"",
    "jsonPayload.event=\"hardKill\"",
    "severity>=ERROR",
  ])
  # join, not one(): with monitoring off the metrics do not exist, and these
  # filters are never used, but must still evaluate.
  hard_kills = "metric.type=\"logging.googleapis.com/user/${join("", google_logging_metric.hard_kills[*].name)}\" AND resource.type=\"cloud_run_revision\""

  # The line the service logs, at ERROR, for each evaluation whose engine
  # the script broke from inside: a wasm trap during the run, an engine
  # fault (docs/security.md, "Engine faults").
  engine_fault_log_filter = join(" AND ", [
    "resource.type=\"cloud_run_revision\"",
    "resource.labels.service_name=\"${var.name}\"",
    "jsonPayload.message=\"engine fault\"",
    "severity>=ERROR",
  ])
  engine_faults = "metric.type=\"logging.googleapis.com/user/${join("", google_logging_metric.engine_faults[*].name)}\" AND resource.type=\"cloud_run_revision\""

  # The same lines from the bulk job's tasks (bulkjob.tf), which run scripts
  # on the same engine: counted apart, as a job's log entries are another
  # resource type, and watched by the same alert.
  bulk_monitoring = var.monitoring_enabled && var.bulk_job.enabled ? 1 : 0
  bulk_engine_fault_log_filter = join(" AND ", [
    "resource.type=\"cloud_run_job\"",
    "resource.labels.job_name=\"${var.name}-bulk\"",
    "jsonPayload.message=\"engine fault\"",
    "severity>=ERROR",
  ])
  bulk_engine_faults  = "metric.type=\"logging.googleapis.com/user/${join("", google_logging_metric.bulk_engine_faults[*].name)}\" AND resource.type=\"cloud_run_job\""
  bulk_fault_logs_url = "https://console.cloud.google.com/logs/query;query=${urlencode(local.bulk_engine_fault_log_filter)}?project=${var.project_id}"

  # The evaluation line a task writes for each input it runs, as the service
  # writes one for each input of a batch, with its outcome; and the job's
  # series of Cloud Run's own job metrics.
  bulk_evaluation_log_filter = join(" AND ", [
    "resource.type=\"cloud_run_job\"",
    "resource.labels.job_name=\"${var.name}-bulk\"",
    "jsonPayload.message=\"evaluation\"",
  ])
  bulk_evaluations   = "metric.type=\"logging.googleapis.com/user/${join("", google_logging_metric.bulk_evaluations[*].name)}\" AND resource.type=\"cloud_run_job\""
  bulk_job_series    = "resource.type=\"cloud_run_job\" AND resource.labels.job_name=\"${var.name}-bulk\""
  bulk_task_attempts = "metric.type=\"run.googleapis.com/job/completed_task_attempt_count\" AND ${local.bulk_job_series}"
  bulk_running_tasks = "metric.type=\"run.googleapis.com/job/running_task_attempts\" AND ${local.bulk_job_series}"

  # The bulk job's charts, below what runs used, with the job only: its
  # inputs by outcome, its task attempts by result (a task that exits
  # non-zero, as one whose shard has inputs not run or answered with a
  # problem does, fails its attempt, retried up to bulk_job.max_retries),
  # the tasks running, and its engine faults.
  bulk_charts_y = 48 + ceil(length(local.usage_metrics) / 2) * 16
  bulk_charts = [for c in [
    {
      title       = "Bulk job: inputs run per minute, by outcome"
      plot        = "STACKED_BAR"
      legend      = "$${metric.labels.outcome}"
      unit        = "inputs"
      filter      = local.bulk_evaluations
      aggregation = { alignmentPeriod = "60s", perSeriesAligner = "ALIGN_SUM", crossSeriesReducer = "REDUCE_SUM", groupByFields = ["metric.label.outcome"] }
    },
    {
      title       = "Bulk job: task attempts ended per 5 minutes, by result"
      plot        = "STACKED_BAR"
      legend      = "$${metric.labels.result}"
      unit        = "attempts"
      filter      = local.bulk_task_attempts
      aggregation = { alignmentPeriod = "300s", perSeriesAligner = "ALIGN_SUM", crossSeriesReducer = "REDUCE_SUM", groupByFields = ["metric.label.result"] }
    },
    {
      title       = "Bulk job: tasks running (parallelism: ${var.bulk_job.parallelism})"
      plot        = "LINE"
      legend      = "tasks"
      unit        = "tasks"
      filter      = local.bulk_running_tasks
      aggregation = { alignmentPeriod = "60s", perSeriesAligner = "ALIGN_MAX", crossSeriesReducer = "REDUCE_SUM" }
    },
    {
      title       = "Bulk job: engine faults, per 5 minutes"
      plot        = "STACKED_BAR"
      legend      = "engine faults"
      unit        = "runs"
      filter      = local.bulk_engine_faults
      aggregation = { alignmentPeriod = "300s", perSeriesAligner = "ALIGN_SUM", crossSeriesReducer = "REDUCE_SUM" }
    },
  ] : c if local.bulk_monitoring == 1]

  # The line the service logs for each evaluation (at INFO, ERROR for a 5xx),
  # with its outcome.
  evaluation_log_filter = join(" AND ", [
    "resource.type=\"cloud_run_revision\"",
    "resource.labels.service_name=\"${var.name}\"",
    "jsonPayload.message=\"evaluation\"",
  ])
  evaluations = "metric.type=\"logging.googleapis.com/user/${join("", google_logging_metric.evaluations[*].name)}\" AND resource.type=\"cloud_run_revision\""

  # What each run used, each a field of the evaluation's log line: a
  # distribution per field, by route. Exponential buckets from scale,
  # doubling: 0.01 ms to about 5 min for times, 4 KiB to 8 GiB for bytes,
  # 0.1 % to 100 % (and past it, in the overflow) for fractions.
  usage_metrics = {
    "run-cpu"            = { field = "cpuMs", unit = "ms", scale = 0.01, title = "CPU time per run (ms)", what = "processor time of each run in its engine" }
    "run-time"           = { field = "runMs", unit = "ms", scale = 0.01, title = "Run time per run (ms)", what = "wall time of each run's script, its global code and jobs" }
    "run-setup"          = { field = "setupMs", unit = "ms", scale = 0.01, title = "Set-up time per run (ms)", what = "wall time of each run's set-up: a fresh instance, the script and input copied in, the input parsed" }
    "run-peak-memory"    = { field = "peakMemoryBytes", unit = "By", scale = 4096, title = "Peak guest heap per run (bytes)", what = "the most each run's guest heap held at once" }
    "run-memory-use"     = { field = "memoryUse", unit = "1", scale = 0.001, title = "Peak heap / memory limit per run", what = "each run's peak heap as a fraction of its memory limit" }
    "run-cpu-budget-use" = { field = "cpuBudgetUse", unit = "1", scale = 0.001, title = "CPU budget used / CPU budget per run", what = "the fraction of its CPU budget each run used" }
  }
  usage = { for k, m in local.usage_metrics : k => "metric.type=\"logging.googleapis.com/user/${var.name}-${k}\" AND resource.type=\"cloud_run_revision\"" }

  # A revision that cannot start. Cloud Run exports no metric of a revision's
  # readiness, and one that never becomes ready has no instances and answers
  # no request: its metrics are absent, which cannot be told apart from a
  # service scaled to zero or a candidate deployed with no traffic. What does
  # exist is a log line for each way it fails, at ERROR:
  #   - the platform's, in the revision's system log, for each instance whose
  #     startup probe (GET /readyz, service.tf) failed its last time:
  #     "STARTUP HTTP probe failed 30 times consecutively for container … on
  #     port 8080 path "/readyz". The instance was not started.";
  #   - the platform's, in the system-event audit log, when a revision (and so
  #     the service's latest one) could not become ready: "Ready condition
  #     status changed to False for Revision … with message: …", which also
  #     covers what never reaches the probe (an image that cannot be pulled
  #     or started);
  #   - the service's own, which say why: "start-up failed" (a configuration
  #     it refuses; the process exits) and "the sandbox workers failed to
  #     start" (a worker that cannot start or lock itself down).
  # One of them is enough to alert on.
  startup_failure_log_filter = join(" AND ", [
    "resource.type=\"cloud_run_revision\"",
    "resource.labels.service_name=\"${var.name}\"",
    "severity>=ERROR",
    "(${join(" OR ", [
      "textPayload=~\"STARTUP [A-Z]+ probe failed\"",
      "protoPayload.status.message:\"Ready condition status changed to False\"",
      "jsonPayload.message=\"start-up failed\"",
      "jsonPayload.message=\"the sandbox workers failed to start\"",
    ])})",
  ])
  startup_failures = "metric.type=\"logging.googleapis.com/user/${join("", google_logging_metric.startup_failures[*].name)}\" AND resource.type=\"cloud_run_revision\""

  logs_url         = "https://console.cloud.google.com/logs/query;query=${urlencode(local.hard_kill_log_filter)}?project=${var.project_id}"
  startup_logs_url = "https://console.cloud.google.com/logs/query;query=${urlencode(local.startup_failure_log_filter)}?project=${var.project_id}"
  fault_logs_url   = "https://console.cloud.google.com/logs/query;query=${urlencode(local.engine_fault_log_filter)}?project=${var.project_id}"
}

resource "google_logging_metric" "hard_kills" {
  count = local.monitoring

  project     = var.project_id
  name        = "${var.name}-hard-kills"
  description = "Runs of the ${var.name} sandbox service that did not stop at their deadline (stuck in native code), whose worker process the service killed."
  filter      = local.hard_kill_log_filter

  metric_descriptor {
    metric_kind  = "DELTA"
    value_type   = "INT64"
    unit         = "1"
    display_name = "${var.name} hard kills"
  }
}

resource "google_logging_metric" "evaluations" {
  count = local.monitoring

  project     = var.project_id
  name        = "${var.name}-evaluations"
  description = "Evaluations of the ${var.name} sandbox service, by outcome (ok, the limit a run reached, or the problem type of the answer) and route, from the service's log lines (log_level info or debug)."
  filter      = local.evaluation_log_filter

  label_extractors = {
    outcome = "EXTRACT(jsonPayload.outcome)"
    route   = "EXTRACT(jsonPayload.route)"
  }

  metric_descriptor {
    metric_kind  = "DELTA"
    value_type   = "INT64"
    unit         = "1"
    display_name = "${var.name} evaluations"

    labels {
      key         = "outcome"
      value_type  = "STRING"
      description = "ok, the limit the run reached, or the problem type of the answer"
    }
    labels {
      key         = "route"
      value_type  = "STRING"
      description = "The route the evaluation came by"
    }
  }
}

resource "google_logging_metric" "usage" {
  for_each = var.monitoring_enabled ? local.usage_metrics : {}

  project         = var.project_id
  name            = "${var.name}-${each.key}"
  description     = "The ${each.value.what}, for the ${var.name} sandbox service, by route, from the evaluation log lines (log_level info or debug)."
  filter          = "${local.evaluation_log_filter} AND jsonPayload.${each.value.field}:*"
  value_extractor = "EXTRACT(jsonPayload.${each.value.field})"

  label_extractors = {
    route = "EXTRACT(jsonPayload.route)"
  }

  metric_descriptor {
    metric_kind  = "DELTA"
    value_type   = "DISTRIBUTION"
    unit         = each.value.unit
    display_name = "${var.name} ${each.value.title}"

    labels {
      key         = "route"
      value_type  = "STRING"
      description = "The route the evaluation came by"
    }
  }

  bucket_options {
    exponential_buckets {
      num_finite_buckets = 25
      growth_factor      = 2
      scale              = each.value.scale
    }
  }
}

resource "google_monitoring_alert_policy" "hard_kills" {
  count = local.monitoring

  project               = var.project_id
  display_name          = "${var.name}: a run stuck in native code was killed"
  combiner              = "OR"
  severity              = "WARNING"
  notification_channels = local.notification_channels
  user_labels           = var.labels

  conditions {
    display_name = "hard kills in 5 minutes > 0"
    condition_threshold {
      filter          = local.hard_kills
      comparison      = "COMPARISON_GT"
      threshold_value = 0
      duration        = "0s"
      aggregations {
        alignment_period     = "300s"
        per_series_aligner   = "ALIGN_SUM"
        cross_series_reducer = "REDUCE_SUM"
      }
      trigger {
        count = 1
      }
    }
  }

  alert_strategy {
    auto_close = "1800s"
  }

  documentation {
    mime_type = "text/markdown"
    subject   = "${var.name}: a run stuck in native code was killed"
    content   = <<-EOT
      A script's run did not stop at its deadline: it was stuck inside a native
      builtin that never reached the engine's interrupt check. The service
      answered it with limit wallClock and killed the run's worker process; the
      instance serves on. One such run is a script to look at; many, from one
      caller, are a hostile or pathological workload.

      The service's log lines of these kills, and its evaluation lines around
      them, say which script and which caller:
      [${var.name} hard kills in Logs Explorer](${local.logs_url})
    EOT
  }
}

resource "google_logging_metric" "engine_faults" {
  count = local.monitoring

  project     = var.project_id
  name        = "${var.name}-engine-faults"
  description = "Evaluations of the ${var.name} sandbox service whose engine the script broke from inside (a wasm trap during the run), from the service's engine fault log lines at ERROR."
  filter      = local.engine_fault_log_filter

  metric_descriptor {
    metric_kind  = "DELTA"
    value_type   = "INT64"
    unit         = "1"
    display_name = "${var.name} engine faults"
  }
}

resource "google_logging_metric" "bulk_engine_faults" {
  count = local.bulk_monitoring

  project     = var.project_id
  name        = "${var.name}-bulk-engine-faults"
  description = "Runs of the ${var.name}-bulk job's tasks whose engine the script broke from inside (a wasm trap during the run), from the tasks' engine fault log lines at ERROR."
  filter      = local.bulk_engine_fault_log_filter

  metric_descriptor {
    metric_kind  = "DELTA"
    value_type   = "INT64"
    unit         = "1"
    display_name = "${var.name}-bulk engine faults"
  }
}

resource "google_logging_metric" "bulk_evaluations" {
  count = local.bulk_monitoring

  project     = var.project_id
  name        = "${var.name}-bulk-evaluations"
  description = "Inputs run by the ${var.name}-bulk job's tasks, by outcome (ok, the limit a run reached, the problem type of the answer, or not-run), from the evaluation line each task writes for each input (log_level info or debug)."
  filter      = local.bulk_evaluation_log_filter

  label_extractors = {
    outcome = "EXTRACT(jsonPayload.outcome)"
  }

  metric_descriptor {
    metric_kind  = "DELTA"
    value_type   = "INT64"
    unit         = "1"
    display_name = "${var.name}-bulk evaluations"

    labels {
      key         = "outcome"
      value_type  = "STRING"
      description = "ok, the limit the run reached, the problem type of the answer, or not-run"
    }
  }
}

resource "google_monitoring_alert_policy" "engine_faults" {
  count = local.monitoring

  project               = var.project_id
  display_name          = "${var.name}: a script broke the engine from inside"
  combiner              = "OR"
  severity              = "ERROR"
  notification_channels = local.notification_channels
  user_labels           = var.labels

  conditions {
    display_name = "engine faults in 5 minutes > 0"
    condition_threshold {
      filter          = local.engine_faults
      comparison      = "COMPARISON_GT"
      threshold_value = 0
      duration        = "0s"
      aggregations {
        alignment_period     = "300s"
        per_series_aligner   = "ALIGN_SUM"
        cross_series_reducer = "REDUCE_SUM"
      }
      trigger {
        count = 1
      }
    }
  }

  dynamic "conditions" {
    for_each = range(local.bulk_monitoring)
    content {
      display_name = "engine faults in the bulk job in 5 minutes > 0"
      condition_threshold {
        filter          = local.bulk_engine_faults
        comparison      = "COMPARISON_GT"
        threshold_value = 0
        duration        = "0s"
        aggregations {
          alignment_period     = "300s"
          per_series_aligner   = "ALIGN_SUM"
          cross_series_reducer = "REDUCE_SUM"
        }
        trigger {
          count = 1
        }
      }
    }
  }

  alert_strategy {
    auto_close = "1800s"
  }

  documentation {
    mime_type = "text/markdown"
    subject   = "${var.name}: a script broke the engine from inside"
    content   = <<-EOT
      A script's run trapped inside the engine (a WebAssembly trap such as
      "out of bounds memory access" or "unreachable"): the script found a way
      to break QuickJS from inside, a memory-safety bug or worse. The wasm
      sandbox held: the run was answered as an infrastructure failure, the
      fault cost only that run (every run is a fresh instance), and the
      service serves on. But a script that can break the engine is how an
      escape begins, so a person must look at it.

      Each fault is one "engine fault" line at ERROR, with the request's
      requestId and trace, the route, the script's scriptSha256 and the
      trap's text:
      [${var.name} engine faults in Logs Explorer](${local.fault_logs_url})
      %{if local.bulk_monitoring == 1}The bulk job's tasks (${var.name}-bulk) write the same line, with
      route "bulk": [${var.name}-bulk engine faults in Logs Explorer](${local.bulk_fault_logs_url})
      %{endif}

      1. Fetch the script from the store: it is the object sha256/HEX under
         the store's prefix, HEX being the line's scriptSha256 without its
         "sha256:".
      2. Reproduce it: `sandbox-cloudrun eval sha256:HEX`, with STORE_URL
         set to the store, says "engine fault" and the trap. The input is
         not logged: the caller that sent requestId has it.
      3. File it privately, with the script, the trap and the image's
         digest, as docs/security.md, "Reporting a vulnerability", says;
         and upstream to QuickJS if the bug is QuickJS's.

      docs/security.md, "Engine faults", says more.
    EOT
  }
}

resource "google_logging_metric" "startup_failures" {
  count = local.monitoring

  project     = var.project_id
  name        = "${var.name}-startup-failures"
  description = "Revisions of the ${var.name} sandbox service that failed to start: a failed startup probe, a revision that did not become ready, or the service's own start-up failure, from the platform's and the service's log lines at ERROR."
  filter      = local.startup_failure_log_filter

  metric_descriptor {
    metric_kind  = "DELTA"
    value_type   = "INT64"
    unit         = "1"
    display_name = "${var.name} start-up failures"
  }
}

resource "google_monitoring_alert_policy" "startup_failures" {
  count = local.monitoring

  project               = var.project_id
  display_name          = "${var.name}: a revision failed to start"
  combiner              = "OR"
  severity              = "ERROR"
  notification_channels = local.notification_channels
  user_labels           = var.labels

  conditions {
    display_name = "start-up failures in 5 minutes > 0, by revision"
    condition_threshold {
      filter          = local.startup_failures
      comparison      = "COMPARISON_GT"
      threshold_value = 0
      duration        = "0s"
      aggregations {
        alignment_period     = "300s"
        per_series_aligner   = "ALIGN_SUM"
        cross_series_reducer = "REDUCE_SUM"
        group_by_fields      = ["resource.label.revision_name"]
      }
      trigger {
        count = 1
      }
    }
  }

  alert_strategy {
    auto_close = "1800s"
  }

  documentation {
    mime_type = "text/markdown"
    subject   = "${var.name}: a revision failed to start"
    content   = <<-EOT
      An instance of a revision of ${var.name} (the incident names the
      revision) did not start, or the revision never became ready. A new
      revision that fails so takes no traffic: the one that served before
      still serves. An instance of the serving revision that fails so is
      capacity lost (at a scale-up, or after a restart); all of them, an
      outage.

      The log lines say which failure it was:
      [${var.name} start-up failures in Logs Explorer](${local.startup_logs_url})

      - "start-up failed": the service refused its configuration; the line
        names each setting that is wrong and what it must be.
      - "the sandbox workers failed to start": the worker processes cannot
        start, most often because they cannot lock themselves down (its
        "lock-down failed" names the step); WORKER_LOCKDOWN=best-effort runs
        without what failed.
      - "STARTUP HTTP probe failed": /readyz did not answer 200 in time; the
        service's WARNING and ERROR lines before it say what was not ready
        (the script store cannot be read, a worker failed to start).
      - "Ready condition status changed to False": the revision's message
        says why, including what never reached the probe (an image that
        cannot be pulled or started).

      docs/deploy.md, "When something is wrong", gives each line's remedy.
    EOT
  }
}

resource "google_monitoring_alert_policy" "server_errors" {
  count = local.monitoring

  project               = var.project_id
  display_name          = "${var.name}: 5xx ratio above ${var.alert_5xx_ratio * 100}%"
  combiner              = "OR"
  severity              = "ERROR"
  notification_channels = local.notification_channels
  user_labels           = var.labels

  conditions {
    display_name = "5xx responses / all responses over 5 minutes > ${var.alert_5xx_ratio}"
    condition_threshold {
      filter             = "${local.requests} AND metric.labels.response_code_class=\"5xx\""
      denominator_filter = local.requests
      comparison         = "COMPARISON_GT"
      threshold_value    = var.alert_5xx_ratio
      duration           = "0s"
      aggregations {
        alignment_period     = "300s"
        per_series_aligner   = "ALIGN_SUM"
        cross_series_reducer = "REDUCE_SUM"
      }
      denominator_aggregations {
        alignment_period     = "300s"
        per_series_aligner   = "ALIGN_SUM"
        cross_series_reducer = "REDUCE_SUM"
      }
      trigger {
        count = 1
      }
    }
  }

  alert_strategy {
    auto_close = "1800s"
  }

  documentation {
    mime_type = "text/markdown"
    subject   = "${var.name}: 5xx ratio above ${var.alert_5xx_ratio * 100}%"
    content   = <<-EOT
      More than ${var.alert_5xx_ratio * 100}% of the requests to ${var.name} over 5 minutes
      were answered with a 5xx status. Each error answer of the service is a
      problem document whose type names the cause (a store it cannot read, a
      backend that did not settle, a request that ran out of time), and so is
      the outcome of its log line, at ERROR; the dashboard counts evaluations
      by outcome. A new revision that fails at once is the usual suspect: roll
      traffic back to the previous one.
    EOT
  }
}

resource "google_monitoring_alert_policy" "too_many_requests" {
  count = local.monitoring

  project               = var.project_id
  display_name          = "${var.name}: 429 ratio above ${var.alert_429_ratio * 100}%"
  combiner              = "OR"
  severity              = "WARNING"
  notification_channels = local.notification_channels
  user_labels           = var.labels

  conditions {
    display_name = "429 responses / all responses over 5 minutes > ${var.alert_429_ratio}"
    condition_threshold {
      filter             = "${local.requests} AND metric.labels.response_code=\"429\""
      denominator_filter = local.requests
      comparison         = "COMPARISON_GT"
      threshold_value    = var.alert_429_ratio
      duration           = "0s"
      aggregations {
        alignment_period     = "300s"
        per_series_aligner   = "ALIGN_SUM"
        cross_series_reducer = "REDUCE_SUM"
      }
      denominator_aggregations {
        alignment_period     = "300s"
        per_series_aligner   = "ALIGN_SUM"
        cross_series_reducer = "REDUCE_SUM"
      }
      trigger {
        count = 1
      }
    }
  }

  alert_strategy {
    auto_close = "1800s"
  }

  documentation {
    mime_type = "text/markdown"
    subject   = "${var.name}: 429 ratio above ${var.alert_429_ratio * 100}%"
    content   = <<-EOT
      More than ${var.alert_429_ratio * 100}% of the requests to ${var.name} over 5 minutes
      were refused with 429. Each instance runs one evaluation at a time, so a
      429 means that all ${var.max_instances} instances (max_instances) were
      busy for as long as Cloud Run holds a request (or that an instance
      refused a second evaluation, problem type busy). Callers should retry
      with backoff; if the load is expected, raise max_instances.
    EOT
  }
}

resource "google_monitoring_alert_policy" "latency" {
  count = local.monitoring

  project               = var.project_id
  display_name          = "${var.name}: p99 latency above ${local.alert_p99_latency_ms} ms"
  combiner              = "OR"
  severity              = "WARNING"
  notification_channels = local.notification_channels
  user_labels           = var.labels

  conditions {
    display_name = "99th percentile of request latency over 5 minutes > ${local.alert_p99_latency_ms} ms"
    condition_threshold {
      filter          = local.latencies
      comparison      = "COMPARISON_GT"
      threshold_value = local.alert_p99_latency_ms
      duration        = "0s"
      aggregations {
        alignment_period     = "300s"
        per_series_aligner   = "ALIGN_DELTA"
        cross_series_reducer = "REDUCE_PERCENTILE_99"
      }
      trigger {
        count = 1
      }
    }
  }

  alert_strategy {
    auto_close = "1800s"
  }

  documentation {
    mime_type = "text/markdown"
    subject   = "${var.name}: p99 latency above ${local.alert_p99_latency_ms} ms"
    content   = <<-EOT
      The slowest 1% of the requests to ${var.name} over 5 minutes took more
      than ${local.alert_p99_latency_ms} ms. A request lasts at least its
      script's run, up to the wall clock it asks for; cold starts and requests
      that wait for a free instance add to it. The dashboard's instance count
      and 429s tell the two apart.
    EOT
  }

  lifecycle {
    precondition {
      condition     = local.alert_p99_latency_ms < local.request_timeout_seconds * 1000
      error_message = "alert_p99_latency_ms (${local.alert_p99_latency_ms}) must be below request_timeout (${var.request_timeout}): no request lasts longer, so the alert could never fire."
    }
  }
}

resource "google_monitoring_dashboard" "sandbox" {
  count = local.monitoring

  project = var.project_id
  dashboard_json = jsonencode({
    displayName = "${var.name} sandbox service"
    mosaicLayout = {
      columns = 48
      tiles = concat([
        {
          xPos = 0, yPos = 0, width = 24, height = 16
          widget = {
            title = "Requests per second, by response code class"
            xyChart = {
              dataSets = [{
                plotType       = "STACKED_BAR"
                legendTemplate = "$${metric.labels.response_code_class}"
                timeSeriesQuery = {
                  timeSeriesFilter = {
                    filter = local.requests
                    aggregation = {
                      alignmentPeriod    = "60s"
                      perSeriesAligner   = "ALIGN_RATE"
                      crossSeriesReducer = "REDUCE_SUM"
                      groupByFields      = ["metric.label.response_code_class"]
                    }
                  }
                }
              }]
              yAxis = { label = "requests/s", scale = "LINEAR" }
            }
          }
        },
        {
          xPos = 24, yPos = 0, width = 24, height = 16
          widget = {
            title = "Evaluations per minute, by outcome"
            xyChart = {
              dataSets = [{
                plotType       = "STACKED_BAR"
                legendTemplate = "$${metric.labels.outcome}"
                timeSeriesQuery = {
                  timeSeriesFilter = {
                    filter = local.evaluations
                    aggregation = {
                      alignmentPeriod    = "60s"
                      perSeriesAligner   = "ALIGN_SUM"
                      crossSeriesReducer = "REDUCE_SUM"
                      groupByFields      = ["metric.label.outcome"]
                    }
                  }
                }
              }]
              yAxis = { label = "evaluations", scale = "LINEAR" }
            }
          }
        },
        {
          xPos = 0, yPos = 16, width = 24, height = 16
          widget = {
            title = "Request latency (ms): p50, p95, p99"
            xyChart = {
              dataSets = [for p in ["50", "95", "99"] : {
                plotType       = "LINE"
                legendTemplate = "p${p}"
                timeSeriesQuery = {
                  timeSeriesFilter = {
                    filter = local.latencies
                    aggregation = {
                      alignmentPeriod    = "60s"
                      perSeriesAligner   = "ALIGN_DELTA"
                      crossSeriesReducer = "REDUCE_PERCENTILE_${p}"
                    }
                  }
                }
              }]
              thresholds = [{ value = local.alert_p99_latency_ms, label = "p99 alert", color = "YELLOW" }]
              yAxis      = { label = "ms", scale = "LINEAR" }
            }
          }
        },
        {
          xPos = 24, yPos = 16, width = 24, height = 16
          widget = {
            title = "Instances, by state (max_instances: ${var.max_instances})"
            xyChart = {
              dataSets = [{
                plotType       = "STACKED_AREA"
                legendTemplate = "$${metric.labels.state}"
                timeSeriesQuery = {
                  timeSeriesFilter = {
                    filter = local.instances
                    aggregation = {
                      alignmentPeriod    = "60s"
                      perSeriesAligner   = "ALIGN_MAX"
                      crossSeriesReducer = "REDUCE_SUM"
                      groupByFields      = ["metric.label.state"]
                    }
                  }
                }
              }]
              yAxis = { label = "instances", scale = "LINEAR" }
            }
          }
        },
        {
          xPos = 0, yPos = 32, width = 24, height = 16
          widget = {
            title = "429s per second (every instance busy)"
            xyChart = {
              dataSets = [{
                plotType       = "LINE"
                legendTemplate = "429"
                timeSeriesQuery = {
                  timeSeriesFilter = {
                    filter = "${local.requests} AND metric.labels.response_code=\"429\""
                    aggregation = {
                      alignmentPeriod    = "60s"
                      perSeriesAligner   = "ALIGN_RATE"
                      crossSeriesReducer = "REDUCE_SUM"
                    }
                  }
                }
              }]
              yAxis = { label = "requests/s", scale = "LINEAR" }
            }
          }
        },
        {
          xPos = 24, yPos = 32, width = 24, height = 16
          widget = {
            title = "Hard kills (runs stuck in native code), per 5 minutes"
            xyChart = {
              dataSets = [{
                plotType       = "STACKED_BAR"
                legendTemplate = "hard kills"
                timeSeriesQuery = {
                  timeSeriesFilter = {
                    filter = local.hard_kills
                    aggregation = {
                      alignmentPeriod    = "300s"
                      perSeriesAligner   = "ALIGN_SUM"
                      crossSeriesReducer = "REDUCE_SUM"
                    }
                  }
                }
              }]
              yAxis = { label = "runs", scale = "LINEAR" }
            }
          }
        },
        ], [
        for i, k in keys(local.usage_metrics) : {
          xPos = (i % 2) * 24, yPos = 48 + floor(i / 2) * 16, width = 24, height = 16
          widget = {
            title = "${local.usage_metrics[k].title}: p50, p95, p99"
            xyChart = {
              dataSets = [for p in ["50", "95", "99"] : {
                plotType       = "LINE"
                legendTemplate = "p${p}"
                timeSeriesQuery = {
                  timeSeriesFilter = {
                    filter = local.usage[k]
                    aggregation = {
                      alignmentPeriod    = "60s"
                      perSeriesAligner   = "ALIGN_DELTA"
                      crossSeriesReducer = "REDUCE_PERCENTILE_${p}"
                    }
                  }
                }
              }]
              yAxis = { label = local.usage_metrics[k].unit, scale = "LINEAR" }
            }
          }
        }
        ], [
        for i, c in local.bulk_charts : {
          xPos = (i % 2) * 24, yPos = local.bulk_charts_y + floor(i / 2) * 16, width = 24, height = 16
          widget = {
            title = c.title
            xyChart = {
              dataSets = [{
                plotType       = c.plot
                legendTemplate = c.legend
                timeSeriesQuery = {
                  timeSeriesFilter = {
                    filter      = c.filter
                    aggregation = c.aggregation
                  }
                }
              }]
              yAxis = { label = c.unit, scale = "LINEAR" }
            }
          }
        }
        ], [
        {
          xPos = 0, yPos = local.bulk_charts_y + ceil(length(local.bulk_charts) / 2) * 16, width = 48, height = 12
          widget = {
            title = "Incidents of the service's alert policies"
            incidentList = {
              policyNames = concat(
                google_monitoring_alert_policy.hard_kills[*].name,
                google_monitoring_alert_policy.engine_faults[*].name,
                google_monitoring_alert_policy.startup_failures[*].name,
                google_monitoring_alert_policy.server_errors[*].name,
                google_monitoring_alert_policy.too_many_requests[*].name,
                google_monitoring_alert_policy.latency[*].name,
              )
            }
          }
        },
      ])
    }
  })
  # the log-based metrics must exist before a chart names them
  depends_on = [google_logging_metric.usage, google_logging_metric.bulk_evaluations]
}


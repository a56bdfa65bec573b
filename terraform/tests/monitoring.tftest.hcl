# Cloud Monitoring: on by default, none of it when monitoring_enabled = false
# (see service.tftest.hcl for how these tests run).

mock_provider "google" {
  mock_resource "google_service_account" {
    defaults = {
      name   = "projects/my-project/serviceAccounts/sandbox-cloudrun-runtime@my-project.iam.gserviceaccount.com"
      email  = "sandbox-cloudrun-runtime@my-project.iam.gserviceaccount.com"
      member = "serviceAccount:sandbox-cloudrun-runtime@my-project.iam.gserviceaccount.com"
    }
  }
}

variables {
  project_id      = "my-project"
  region          = "europe-west1"
  image           = "registry.example/my-project/sandbox/sandbox-cloudrun:0123abc"
  invoker_members = ["serviceAccount:loom@my-project.iam.gserviceaccount.com", "user:you@example.com"]
}

run "monitoring_on_by_default" {
  assert {
    condition     = length(google_logging_metric.hard_kills) == 1 && length(google_logging_metric.engine_faults) == 1 && length(google_logging_metric.evaluations) == 1 && length(google_logging_metric.startup_failures) == 1 && length(google_monitoring_dashboard.sandbox) == 1
    error_message = "Monitoring is on by default: the log-based metrics and the dashboard."
  }
  assert {
    condition = (length(google_monitoring_alert_policy.hard_kills) == 1 && length(google_monitoring_alert_policy.engine_faults) == 1 &&
      length(google_monitoring_alert_policy.startup_failures) == 1 && length(google_monitoring_alert_policy.server_errors) == 1 &&
    length(google_monitoring_alert_policy.too_many_requests) == 1 && length(google_monitoring_alert_policy.latency) == 1)
    error_message = "Monitoring is on by default: the six alert policies."
  }
  assert {
    condition     = keys(output.alert_policy_names) == ["engine_faults", "hard_kills", "latency", "server_errors", "startup_failures", "too_many_requests"] && output.dashboard_url != null
    error_message = "The outputs name the alert policies and the dashboard."
  }
}

run "hard_kills_counted_from_the_service_log_line" {
  command = plan

  assert {
    condition = alltrue([for term in [
      "resource.type=\"cloud_run_revision\"",
      "resource.labels.service_name=\"sandbox-cloudrun\"",
      "jsonPayload.event=\"hardKill\"",
      "severity>=ERROR",
    ] : strcontains(google_logging_metric.hard_kills[0].filter, term)])
    error_message = "The hard-kill metric must count the service's hardKill log lines, at ERROR, of this service only: ${google_logging_metric.hard_kills[0].filter}"
  }
  assert {
    condition     = google_logging_metric.hard_kills[0].metric_descriptor[0].metric_kind == "DELTA" && google_logging_metric.hard_kills[0].metric_descriptor[0].value_type == "INT64"
    error_message = "The hard-kill metric is a counter (DELTA, INT64)."
  }
  assert {
    condition     = google_logging_metric.hard_kills[0].name == "sandbox-cloudrun-hard-kills"
    error_message = "The hard-kill metric is NAME-hard-kills."
  }
}

run "hard_kill_alert_on_any_kill" {
  assert {
    condition     = one(google_monitoring_alert_policy.hard_kills[0].conditions[0].condition_threshold).filter == "metric.type=\"logging.googleapis.com/user/${google_logging_metric.hard_kills[0].name}\" AND resource.type=\"cloud_run_revision\""
    error_message = "The hard-kill alert must watch the hard-kill metric."
  }
  assert {
    condition = (one(google_monitoring_alert_policy.hard_kills[0].conditions[0].condition_threshold).comparison == "COMPARISON_GT" &&
      one(google_monitoring_alert_policy.hard_kills[0].conditions[0].condition_threshold).threshold_value == 0 &&
    one(one(google_monitoring_alert_policy.hard_kills[0].conditions[0].condition_threshold).aggregations).cross_series_reducer == "REDUCE_SUM")
    error_message = "The hard-kill alert must fire on one kill: the sum over the service above 0."
  }
}

run "engine_faults_counted_from_the_service_line" {
  command = plan

  assert {
    condition = alltrue([for term in [
      "resource.type=\"cloud_run_revision\"",
      "resource.labels.service_name=\"sandbox-cloudrun\"",
      "jsonPayload.message=\"engine fault\"",
      "severity>=ERROR",
    ] : strcontains(google_logging_metric.engine_faults[0].filter, term)])
    error_message = "The engine-fault metric must count the service's \"engine fault\" lines, at ERROR, of this service only: ${google_logging_metric.engine_faults[0].filter}"
  }
  assert {
    # every term must hold: none of them is an alternative
    condition     = length(regexall(" AND ", google_logging_metric.engine_faults[0].filter)) == 3 && length(regexall(" OR |NOT ", google_logging_metric.engine_faults[0].filter)) == 0
    error_message = "The engine-fault metric's filter must be the four terms joined by AND, and nothing else: ${google_logging_metric.engine_faults[0].filter}"
  }
  assert {
    condition     = google_logging_metric.engine_faults[0].name == "sandbox-cloudrun-engine-faults" && google_logging_metric.engine_faults[0].metric_descriptor[0].metric_kind == "DELTA" && google_logging_metric.engine_faults[0].metric_descriptor[0].value_type == "INT64"
    error_message = "The engine-fault metric is a counter (DELTA, INT64) named NAME-engine-faults."
  }
}

run "engine_fault_alert_on_one_line" {
  assert {
    condition     = one(google_monitoring_alert_policy.engine_faults[0].conditions[0].condition_threshold).filter == "metric.type=\"logging.googleapis.com/user/${google_logging_metric.engine_faults[0].name}\" AND resource.type=\"cloud_run_revision\""
    error_message = "The engine-fault alert must watch the engine-fault metric."
  }
  assert {
    condition = (one(google_monitoring_alert_policy.engine_faults[0].conditions[0].condition_threshold).comparison == "COMPARISON_GT" &&
      one(google_monitoring_alert_policy.engine_faults[0].conditions[0].condition_threshold).threshold_value == 0 &&
      one(google_monitoring_alert_policy.engine_faults[0].conditions[0].condition_threshold).duration == "0s" &&
      one(one(google_monitoring_alert_policy.engine_faults[0].conditions[0].condition_threshold).aggregations).per_series_aligner == "ALIGN_SUM" &&
      one(one(google_monitoring_alert_policy.engine_faults[0].conditions[0].condition_threshold).aggregations).cross_series_reducer == "REDUCE_SUM" &&
    one(one(google_monitoring_alert_policy.engine_faults[0].conditions[0].condition_threshold).trigger).count == 1)
    error_message = "The engine-fault alert must fire on one line: the sum above 0, at once."
  }
  assert {
    condition     = google_monitoring_alert_policy.engine_faults[0].severity == "ERROR" && strcontains(google_monitoring_alert_policy.engine_faults[0].documentation[0].content, urlencode(google_logging_metric.engine_faults[0].filter))
    error_message = "The engine-fault alert is an ERROR whose documentation links the log lines it counts."
  }
  assert {
    condition = alltrue([for step in ["scriptSha256", "sha256/HEX", "sandbox-cloudrun eval sha256:HEX", "Reporting a vulnerability", "docs/security.md, \"Engine faults\""] :
    strcontains(google_monitoring_alert_policy.engine_faults[0].documentation[0].content, step)])
    error_message = "The engine-fault alert's documentation tells the operator what to do: fetch the script by the line's scriptSha256, reproduce it with the eval verb, file it."
  }
}

run "engine_faults_follow_the_service_name" {
  command = plan

  variables {
    name = "sbx-test"
  }

  assert {
    condition     = google_logging_metric.engine_faults[0].name == "sbx-test-engine-faults" && strcontains(google_logging_metric.engine_faults[0].filter, "resource.labels.service_name=\"sbx-test\"")
    error_message = "The engine-fault metric must follow the service's name."
  }
}

run "startup_failures_counted_from_the_platform_and_service_lines" {
  command = plan

  assert {
    condition = alltrue([for term in [
      "resource.type=\"cloud_run_revision\"",
      "resource.labels.service_name=\"sandbox-cloudrun\"",
      "severity>=ERROR",
      "textPayload=~\"STARTUP [A-Z]+ probe failed\"",
      "protoPayload.status.message:\"Ready condition status changed to False\"",
      "jsonPayload.message=\"start-up failed\"",
      "jsonPayload.message=\"the sandbox workers failed to start\"",
    ] : strcontains(google_logging_metric.startup_failures[0].filter, term)])
    error_message = "The start-up metric must count, for this service only, at ERROR: the platform's failed startup probe and not-ready revision, and the service's own start-up failures: ${google_logging_metric.startup_failures[0].filter}"
  }
  assert {
    # the kinds of line are alternatives: each one alone is a failure
    condition     = length(regexall(" OR ", google_logging_metric.startup_failures[0].filter)) == 3 && length(regexall(" AND ", google_logging_metric.startup_failures[0].filter)) == 3
    error_message = "The start-up metric's filter must be this service's lines at ERROR AND (any one of the four kinds): ${google_logging_metric.startup_failures[0].filter}"
  }
  assert {
    condition     = google_logging_metric.startup_failures[0].name == "sandbox-cloudrun-startup-failures" && google_logging_metric.startup_failures[0].metric_descriptor[0].metric_kind == "DELTA" && google_logging_metric.startup_failures[0].metric_descriptor[0].value_type == "INT64"
    error_message = "The start-up metric is a counter (DELTA, INT64) named NAME-startup-failures."
  }
}

run "startup_failure_alert_on_one_line" {
  assert {
    condition     = one(google_monitoring_alert_policy.startup_failures[0].conditions[0].condition_threshold).filter == "metric.type=\"logging.googleapis.com/user/${google_logging_metric.startup_failures[0].name}\" AND resource.type=\"cloud_run_revision\""
    error_message = "The start-up alert must watch the start-up metric."
  }
  assert {
    condition = (one(google_monitoring_alert_policy.startup_failures[0].conditions[0].condition_threshold).comparison == "COMPARISON_GT" &&
      one(google_monitoring_alert_policy.startup_failures[0].conditions[0].condition_threshold).threshold_value == 0 &&
      one(google_monitoring_alert_policy.startup_failures[0].conditions[0].condition_threshold).duration == "0s" &&
      one(one(google_monitoring_alert_policy.startup_failures[0].conditions[0].condition_threshold).aggregations).per_series_aligner == "ALIGN_SUM" &&
    one(one(google_monitoring_alert_policy.startup_failures[0].conditions[0].condition_threshold).aggregations).cross_series_reducer == "REDUCE_SUM")
    error_message = "The start-up alert must fire on one line: the sum above 0, at once."
  }
  assert {
    condition     = one(one(google_monitoring_alert_policy.startup_failures[0].conditions[0].condition_threshold).aggregations).group_by_fields == tolist(["resource.label.revision_name"])
    error_message = "The start-up alert must open an incident per revision, which names it."
  }
  assert {
    condition     = google_monitoring_alert_policy.startup_failures[0].severity == "ERROR" && strcontains(google_monitoring_alert_policy.startup_failures[0].documentation[0].content, urlencode(google_logging_metric.startup_failures[0].filter))
    error_message = "The start-up alert is an ERROR whose documentation links the log lines it counts."
  }
}

run "startup_failures_follow_the_service_name" {
  command = plan

  variables {
    name = "sbx-test"
  }

  assert {
    condition     = google_logging_metric.startup_failures[0].name == "sbx-test-startup-failures" && strcontains(google_logging_metric.startup_failures[0].filter, "resource.labels.service_name=\"sbx-test\"")
    error_message = "The start-up metric must follow the service's name."
  }
}

run "evaluations_by_outcome" {
  command = plan

  assert {
    condition     = strcontains(google_logging_metric.evaluations[0].filter, "jsonPayload.message=\"evaluation\"") && strcontains(google_logging_metric.evaluations[0].filter, "resource.labels.service_name=\"sandbox-cloudrun\"")
    error_message = "The evaluations metric must count the service's evaluation log lines."
  }
  assert {
    condition     = google_logging_metric.evaluations[0].label_extractors == tomap({ outcome = "EXTRACT(jsonPayload.outcome)", route = "EXTRACT(jsonPayload.route)" })
    error_message = "The evaluations metric must be labelled by outcome and route."
  }
}

run "error_and_429_ratios_and_latency" {
  command = plan

  assert {
    condition = (one(google_monitoring_alert_policy.server_errors[0].conditions[0].condition_threshold).filter == "metric.type=\"run.googleapis.com/request_count\" AND resource.type=\"cloud_run_revision\" AND resource.labels.service_name=\"sandbox-cloudrun\" AND metric.labels.response_code_class=\"5xx\"" &&
      one(google_monitoring_alert_policy.server_errors[0].conditions[0].condition_threshold).denominator_filter == "metric.type=\"run.googleapis.com/request_count\" AND resource.type=\"cloud_run_revision\" AND resource.labels.service_name=\"sandbox-cloudrun\"" &&
    one(google_monitoring_alert_policy.server_errors[0].conditions[0].condition_threshold).threshold_value == 0.05)
    error_message = "The 5xx alert must watch 5xx responses over all responses of this service, above 0.05 by default."
  }
  assert {
    condition = (strcontains(one(google_monitoring_alert_policy.too_many_requests[0].conditions[0].condition_threshold).filter, "metric.labels.response_code=\"429\"") &&
      one(google_monitoring_alert_policy.too_many_requests[0].conditions[0].condition_threshold).denominator_filter == one(google_monitoring_alert_policy.server_errors[0].conditions[0].condition_threshold).denominator_filter &&
    one(google_monitoring_alert_policy.too_many_requests[0].conditions[0].condition_threshold).threshold_value == 0.05)
    error_message = "The 429 alert must watch 429 responses over all responses of this service, above 0.05 by default."
  }
  assert {
    condition = (one(google_monitoring_alert_policy.latency[0].conditions[0].condition_threshold).filter == "metric.type=\"run.googleapis.com/request_latencies\" AND resource.type=\"cloud_run_revision\" AND resource.labels.service_name=\"sandbox-cloudrun\"" &&
      one(one(google_monitoring_alert_policy.latency[0].conditions[0].condition_threshold).aggregations).cross_series_reducer == "REDUCE_PERCENTILE_99" &&
    one(google_monitoring_alert_policy.latency[0].conditions[0].condition_threshold).threshold_value == 10000)
    error_message = "The latency alert must watch the service's p99 latency, above 10000 ms by default."
  }
  assert {
    condition = alltrue([for p in concat(google_monitoring_alert_policy.hard_kills, google_monitoring_alert_policy.engine_faults, google_monitoring_alert_policy.startup_failures, google_monitoring_alert_policy.server_errors, google_monitoring_alert_policy.too_many_requests, google_monitoring_alert_policy.latency) :
    p.notification_channels == null || length(coalesce(p.notification_channels, [])) == 0])
    error_message = "Without notification_channels the policies notify nobody."
  }
}

run "thresholds_and_channels_from_variables" {
  command = plan

  variables {
    alert_5xx_ratio       = 0.2
    alert_429_ratio       = 0.3
    alert_p99_latency_ms  = 2500
    notification_channels = ["123", "projects/other-project/notificationChannels/456"]
  }

  assert {
    condition = (one(google_monitoring_alert_policy.server_errors[0].conditions[0].condition_threshold).threshold_value == 0.2 &&
      one(google_monitoring_alert_policy.too_many_requests[0].conditions[0].condition_threshold).threshold_value == 0.3 &&
    one(google_monitoring_alert_policy.latency[0].conditions[0].condition_threshold).threshold_value == 2500)
    error_message = "The thresholds must follow alert_5xx_ratio, alert_429_ratio and alert_p99_latency_ms."
  }
  assert {
    condition = alltrue([for p in concat(google_monitoring_alert_policy.hard_kills, google_monitoring_alert_policy.engine_faults, google_monitoring_alert_policy.startup_failures, google_monitoring_alert_policy.server_errors, google_monitoring_alert_policy.too_many_requests, google_monitoring_alert_policy.latency) :
    p.notification_channels == tolist(["projects/my-project/notificationChannels/123", "projects/other-project/notificationChannels/456"])])
    error_message = "Every policy must notify notification_channels, channel IDs as full names of the project's channels."
  }
}

run "latency_threshold_follows_a_short_timeout" {
  command = plan

  variables {
    request_timeout = "8s"
    max_wall_clock  = "5s"
  }

  assert {
    condition     = one(google_monitoring_alert_policy.latency[0].conditions[0].condition_threshold).threshold_value == 4000
    error_message = "By default the p99 threshold is 10000 ms, or half of request_timeout when that is less."
  }
}

run "latency_threshold_beyond_the_timeout" {
  command = plan

  variables {
    alert_p99_latency_ms = 60000
  }

  # No request outlasts the 60s request timeout: such an alert never fires.
  expect_failures = [google_monitoring_alert_policy.latency]
}

run "dashboard" {
  assert {
    condition = toset([for t in jsondecode(google_monitoring_dashboard.sandbox[0].dashboard_json).mosaicLayout.tiles : t.widget.title]) == toset([
      "Requests per second, by response code class",
      "Evaluations per minute, by outcome",
      "Request latency (ms): p50, p95, p99",
      "Instances, by state (max_instances: 10)",
      "429s per second (every instance busy)",
      "Hard kills (runs stuck in native code), per 5 minutes",
      "CPU time per run (ms): p50, p95, p99",
      "Run time per run (ms): p50, p95, p99",
      "Set-up time per run (ms): p50, p95, p99",
      "Peak guest heap per run (bytes): p50, p95, p99",
      "Peak heap / memory limit per run: p50, p95, p99",
      "CPU budget used / CPU budget per run: p50, p95, p99",
      "Incidents of the service's alert policies",
    ])
    error_message = "The dashboard shows requests by response code class, evaluations by outcome, latency, instances, 429s, hard kills, what runs used and incidents."
  }
  assert {
    condition = alltrue([
      for t in jsondecode(google_monitoring_dashboard.sandbox[0].dashboard_json).mosaicLayout.tiles :
      alltrue([for d in try(t.widget.xyChart.dataSets, []) : strcontains(d.timeSeriesQuery.timeSeriesFilter.filter, "resource.type=\"cloud_run_revision\"")])
    ])
    error_message = "Every chart of the dashboard must read the service's Cloud Run revisions."
  }
  assert {
    condition     = length(one([for t in jsondecode(google_monitoring_dashboard.sandbox[0].dashboard_json).mosaicLayout.tiles : t.widget.incidentList.policyNames if can(t.widget.incidentList)])) == 6
    error_message = "The incident list shows the six alert policies."
  }
}

run "monitoring_follows_the_service_name" {
  command = plan

  variables {
    name = "sbx-test"
  }

  assert {
    condition     = google_logging_metric.hard_kills[0].name == "sbx-test-hard-kills" && strcontains(google_logging_metric.hard_kills[0].filter, "resource.labels.service_name=\"sbx-test\"")
    error_message = "The metrics must follow the service's name."
  }
  assert {
    condition     = strcontains(one(google_monitoring_alert_policy.latency[0].conditions[0].condition_threshold).filter, "resource.labels.service_name=\"sbx-test\"")
    error_message = "The alerts must watch the service by its name."
  }
}

run "monitoring_off" {
  command = plan

  variables {
    monitoring_enabled = false
  }

  assert {
    condition = (length(google_logging_metric.hard_kills) + length(google_logging_metric.evaluations) + length(google_monitoring_dashboard.sandbox) +
      length(google_logging_metric.engine_faults) + length(google_monitoring_alert_policy.engine_faults) +
      length(google_logging_metric.startup_failures) + length(google_monitoring_alert_policy.startup_failures) +
      length(google_monitoring_alert_policy.hard_kills) + length(google_monitoring_alert_policy.server_errors) +
    length(google_monitoring_alert_policy.too_many_requests) + length(google_monitoring_alert_policy.latency)) == 0
    error_message = "monitoring_enabled = false must create no metric, alert policy or dashboard."
  }
  assert {
    condition     = output.dashboard_url == null && length(output.alert_policy_names) == 0
    error_message = "With monitoring off there is no dashboard and no alert policy to name."
  }
}

run "usage_from_the_evaluation_line" {
  command = plan

  assert {
    condition     = toset(keys(google_logging_metric.usage)) == toset(["run-cpu", "run-time", "run-setup", "run-peak-memory", "run-memory-use", "run-cpu-budget-use"])
    error_message = "What each run used is six distributions: CPU, run and set-up time, peak heap, and the fractions of the memory limit and CPU budget."
  }
  assert {
    condition = alltrue([for k, m in google_logging_metric.usage :
      m.metric_descriptor[0].value_type == "DISTRIBUTION" && m.metric_descriptor[0].metric_kind == "DELTA" &&
      strcontains(m.filter, "jsonPayload.message=\"evaluation\"") && strcontains(m.filter, "resource.labels.service_name=\"sandbox-cloudrun\"") &&
    m.name == "sandbox-cloudrun-${k}"])
    error_message = "Each usage metric is a distribution of this service's evaluation lines, named NAME-KEY."
  }
  assert {
    condition = { for k, m in google_logging_metric.usage : k => m.value_extractor } == {
      "run-cpu"            = "EXTRACT(jsonPayload.cpuMs)", "run-time" = "EXTRACT(jsonPayload.runMs)", "run-setup" = "EXTRACT(jsonPayload.setupMs)",
      "run-peak-memory"    = "EXTRACT(jsonPayload.peakMemoryBytes)", "run-memory-use" = "EXTRACT(jsonPayload.memoryUse)",
      "run-cpu-budget-use" = "EXTRACT(jsonPayload.cpuBudgetUse)",
    }
    error_message = "Each usage metric extracts its field of the evaluation line (handler/middleware.go writes them)."
  }
  assert {
    condition = alltrue([for k, m in google_logging_metric.usage :
    strcontains(google_monitoring_dashboard.sandbox[0].dashboard_json, "logging.googleapis.com/user/${m.name}")])
    error_message = "The dashboard plots every usage metric."
  }
}

run "no_usage_metrics_without_monitoring" {
  command = plan

  variables {
    monitoring_enabled = false
  }

  assert {
    condition     = length(google_logging_metric.usage) == 0
    error_message = "monitoring_enabled = false makes no usage metric."
  }
}

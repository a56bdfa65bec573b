output "service_url" {
  description = "URL of the Cloud Run service: the audience of callers' ID tokens, and the --url of the conformance kit."
  value       = google_cloud_run_v2_service.sandbox.uri
}

output "service_name" {
  description = "Name of the Cloud Run service (the _SERVICE substitution of cloudbuild.yaml)."
  value       = google_cloud_run_v2_service.sandbox.name
}

output "bucket_name" {
  description = "Name of the scripts bucket; null in the credential-free mode."
  value       = one(google_storage_bucket.scripts[*].name)
}

output "store_url" {
  description = "STORE_URL the service runs with: gs://BUCKET, or none in the credential-free mode."
  value       = local.store_url
}

output "service_account_email" {
  description = "Email of the runtime service account (no keys; at most read access to the scripts bucket)."
  value       = google_service_account.runtime.email
}

output "network_name" {
  description = "Name of the egress network the service's direct VPC egress uses."
  value       = google_compute_network.egress.name
}

output "dashboard_url" {
  description = "Console address of the service's Cloud Monitoring dashboard; null with monitoring_enabled = false."
  value = one([
    for d in google_monitoring_dashboard.sandbox :
    "https://console.cloud.google.com/monitoring/dashboards/custom/${reverse(split("/", d.id))[0]}?project=${var.project_id}"
  ])
}

output "alert_policy_names" {
  description = "Names (projects/PROJECT/alertPolicies/ID) of the service's alert policies, by what they watch: hard_kills, engine_faults, startup_failures, server_errors, too_many_requests, latency. Empty with monitoring_enabled = false."
  value = merge(
    { for p in google_monitoring_alert_policy.hard_kills : "hard_kills" => p.name },
    { for p in google_monitoring_alert_policy.engine_faults : "engine_faults" => p.name },
    { for p in google_monitoring_alert_policy.startup_failures : "startup_failures" => p.name },
    { for p in google_monitoring_alert_policy.server_errors : "server_errors" => p.name },
    { for p in google_monitoring_alert_policy.too_many_requests : "too_many_requests" => p.name },
    { for p in google_monitoring_alert_policy.latency : "latency" => p.name },
  )
}

output "service_settings" {
  description = "What the Cloud Run service runs with, as Terraform sets it: ingress, request timeout, CPU and memory limits, instances, deletion protection and the container's environment (Cloud Build changes only the image)."
  value = {
    ingress             = google_cloud_run_v2_service.sandbox.ingress
    request_timeout     = google_cloud_run_v2_service.sandbox.template[0].timeout
    cpu                 = google_cloud_run_v2_service.sandbox.template[0].containers[0].resources[0].limits.cpu
    memory              = google_cloud_run_v2_service.sandbox.template[0].containers[0].resources[0].limits.memory
    min_instances       = google_cloud_run_v2_service.sandbox.template[0].scaling[0].min_instance_count
    max_instances       = google_cloud_run_v2_service.sandbox.template[0].scaling[0].max_instance_count
    deletion_protection = google_cloud_run_v2_service.sandbox.deletion_protection
    env                 = { for e in google_cloud_run_v2_service.sandbox.template[0].containers[0].env : e.name => e.value }
  }
}

output "bulk_job_name" {
  description = "Name of the Cloud Run job for bulk runs (gcloud run jobs execute NAME); null unless bulk_job.enabled."
  value       = one(google_cloud_run_v2_job.bulk[*].name)
}

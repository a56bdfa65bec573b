output "service_url" {
  description = "URL of the service."
  value       = module.sandbox.service_url
}

output "bucket_name" {
  description = "Scripts bucket; null in the credential-free mode."
  value       = module.sandbox.bucket_name
}

output "store_url" {
  description = "STORE_URL of the service, for the put verb."
  value       = module.sandbox.store_url
}

output "service_account_email" {
  description = "Runtime service account."
  value       = module.sandbox.service_account_email
}

output "dashboard_url" {
  description = "The service's Cloud Monitoring dashboard; null with monitoring off."
  value       = module.sandbox.dashboard_url
}

output "service_settings" {
  description = "What the service runs with: ingress, timeout, limits, instances, deletion protection, environment."
  value       = module.sandbox.service_settings
}

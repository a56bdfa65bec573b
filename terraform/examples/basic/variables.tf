variable "project_id" {
  type        = string
  description = "Project to deploy into."
}

variable "region" {
  type        = string
  description = "Region of the service, such as europe-west1."
}

variable "image" {
  type        = string
  description = "Image the service is created with: the one cloudbuild.yaml pushed, REGISTRY/PROJECT/REPOSITORY/SERVICE:COMMIT_SHA (docs/deploy.md)."

  validation {
    condition     = !startswith(var.image, "REGISTRY/") && !endswith(var.image, ":COMMIT_SHA")
    error_message = "image is still the placeholder of terraform.tfvars.example: put the IMAGE that docs/deploy.md step 3 printed (echo \"$IMAGE\"), $REGISTRY/$PROJECT/$REPOSITORY/$SERVICE:$COMMIT, the image cloudbuild.yaml pushed."
  }
}

variable "invoker_members" {
  type        = list(string)
  description = "Who may call the service, such as [\"serviceAccount:loom@my-project.iam.gserviceaccount.com\", \"user:you@example.com\"]."
}

variable "script_writers" {
  type        = list(string)
  default     = []
  description = "Who may upload scripts to the bucket (create only)."
}

variable "deployers" {
  type        = list(string)
  default     = []
  description = "Who rolls images with gcloud run deploy (and moves the bulk job, if enabled, to them): the service account your Cloud Build trigger runs as."
}

variable "scripts_bucket_enabled" {
  type        = bool
  default     = true
  description = "false: the credential-free mode (no bucket, no grant; scripts by value only)."
}

# The module's inputs that docs/deploy.md tells operators to change. null (the
# default of each) stands for the module's own default, which
# terraform/variables.tf documents; for any other input, add it to the module
# block in main.tf.

variable "ingress" {
  type        = string
  default     = null
  description = "Where requests may come from (module default: INGRESS_TRAFFIC_INTERNAL_LOAD_BALANCER; INGRESS_TRAFFIC_ALL for a test from outside the project)."
}

variable "request_timeout" {
  type        = string
  default     = null
  description = "Cloud Run request timeout in whole seconds (module default: 60s)."
}

variable "max_wall_clock" {
  type        = string
  default     = null
  description = "Largest wall clock a request may ask for, in whole seconds (module default: 30s)."
}

variable "cpu" {
  type        = string
  default     = null
  description = "CPU limit of the container: 1, 2, 4, 6 or 8 (module default: 1)."
}

variable "memory" {
  type        = string
  default     = null
  description = "Memory limit of the container, 512Mi to 32Gi (module default: 1Gi)."
}

variable "min_instances" {
  type        = number
  default     = null
  description = "Instances kept warm (module default: 0)."
}

variable "max_instances" {
  type        = number
  default     = null
  description = "Largest number of instances, and of evaluations at once (module default: 10)."
}

variable "env" {
  type        = map(string)
  default     = null
  description = "Further environment variables of the service, such as POOL_SIZE or HARD_KILL_GRACE (module default: none)."
}

variable "deletion_protection" {
  type        = bool
  default     = null
  description = "Refuse to destroy the service (module default: true); set false and apply before terraform destroy."
}

variable "monitoring_enabled" {
  type        = bool
  default     = null
  description = "Create the alert policies, log-based metrics and dashboard (module default: true)."
}

variable "notification_channels" {
  type        = list(string)
  default     = null
  description = "Notification channel IDs or names for the alert policies (module default: none)."
}

variable "alert_5xx_ratio" {
  type        = number
  default     = null
  description = "Fraction of 5xx answers over 5 minutes that raises an alert (module default: 0.05)."
}

variable "alert_429_ratio" {
  type        = number
  default     = null
  description = "Fraction of 429 answers over 5 minutes that raises an alert (module default: 0.05)."
}

variable "alert_p99_latency_ms" {
  type        = number
  default     = null
  description = "p99 latency over 5 minutes, in ms, that raises an alert (module default: 10000, or half of request_timeout when that is less)."
}

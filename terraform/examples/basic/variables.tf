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
  description = "Who rolls images with gcloud run deploy: the service account your Cloud Build trigger runs as."
}

variable "scripts_bucket_enabled" {
  type        = bool
  default     = true
  description = "false: the credential-free mode (no bucket, no grant; scripts by value only)."
}

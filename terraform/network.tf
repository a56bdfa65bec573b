# Egress denied at the network layer. The guest (the script) has no network at
# all; this is defence in depth for the host process. Every packet the service
# sends leaves through direct VPC egress (egress = ALL_TRAFFIC, service.tf) into
# this network, which:
#   - has no default route to the internet, only a route to the Private Google
#     Access range private.googleapis.com (199.36.153.8/30);
#   - resolves *.googleapis.com to that range through a private DNS zone;
#   - allows egress to that range on TCP 443, and denies all other egress.
# The metadata server (169.254.169.254) stays reachable: Cloud Run serves it
# outside the VPC. README.md says what that means for the runtime identity.

locals {
  # private.googleapis.com: Google APIs over Private Google Access.
  private_google_apis_range = "199.36.153.8/30"
  private_google_apis_ips   = ["199.36.153.8", "199.36.153.9", "199.36.153.10", "199.36.153.11"]
}

resource "google_compute_network" "egress" {
  project                         = var.project_id
  name                            = "${var.name}-egress"
  description                     = "Egress of the ${var.name} sandbox service: Google APIs only."
  auto_create_subnetworks         = false
  delete_default_routes_on_create = true
  routing_mode                    = "REGIONAL"
}

resource "google_compute_subnetwork" "egress" {
  project                  = var.project_id
  name                     = "${var.name}-egress"
  region                   = var.region
  network                  = google_compute_network.egress.id
  ip_cidr_range            = var.subnet_cidr
  stack_type               = "IPV4_ONLY"
  private_ip_google_access = true
}

# The only route out of the network.
resource "google_compute_route" "private_google_apis" {
  project          = var.project_id
  name             = "${var.name}-private-google-apis"
  description      = "private.googleapis.com, for Private Google Access. There is no default route."
  network          = google_compute_network.egress.name
  dest_range       = local.private_google_apis_range
  next_hop_gateway = "default-internet-gateway"
  priority         = 1000
}

resource "google_compute_firewall" "allow_private_google_apis" {
  project            = var.project_id
  name               = "${var.name}-allow-google-apis-egress"
  description        = "Egress to private.googleapis.com on 443: the scripts bucket and Google's token keys."
  network            = google_compute_network.egress.name
  direction          = "EGRESS"
  priority           = 1000
  destination_ranges = [local.private_google_apis_range]

  allow {
    protocol = "tcp"
    ports    = ["443"]
  }
}

# Below the allow rule (a larger number is a lower priority): everything else
# is dropped, and logged.
resource "google_compute_firewall" "deny_all_egress" {
  project            = var.project_id
  name               = "${var.name}-deny-all-egress"
  description        = "Deny all other egress of the ${var.name} sandbox service."
  network            = google_compute_network.egress.name
  direction          = "EGRESS"
  priority           = 65000
  destination_ranges = ["0.0.0.0/0"]

  deny {
    protocol = "all"
  }

  log_config {
    metadata = "EXCLUDE_ALL_METADATA"
  }
}

# *.googleapis.com resolves to private.googleapis.com inside the network.
resource "google_dns_managed_zone" "googleapis" {
  project     = var.project_id
  name        = "${var.name}-googleapis"
  dns_name    = "googleapis.com."
  description = "Google APIs through Private Google Access, for the ${var.name} egress network."
  visibility  = "private"

  private_visibility_config {
    networks {
      network_url = google_compute_network.egress.id
    }
  }
}

resource "google_dns_record_set" "googleapis_cname" {
  project      = var.project_id
  managed_zone = google_dns_managed_zone.googleapis.name
  name         = "*.googleapis.com."
  type         = "CNAME"
  ttl          = 300
  rrdatas      = ["private.googleapis.com."]
}

resource "google_dns_record_set" "private_googleapis_a" {
  project      = var.project_id
  managed_zone = google_dns_managed_zone.googleapis.name
  name         = "private.googleapis.com."
  type         = "A"
  ttl          = 300
  rrdatas      = local.private_google_apis_ips
}

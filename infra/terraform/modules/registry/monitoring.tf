# The region's monitoring, passed to the fleet's collectors (modules/fleet/monitoring.tf).
variable "monitoring" {
  description = "The region's monitoring (modules/monitoring's collector output), for the hosts' collectors: Prometheus in agent mode writing to the region's workspace, the CloudWatch agent shipping the journal to /idgen/<region>/<service>. null: no collectors."
  type        = any
  default     = null
}

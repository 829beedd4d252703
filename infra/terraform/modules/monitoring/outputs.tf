output "alarm_topic_arn" {
  description = "ARN of the alarm topic (<name>-alarms): give it as the alarm actions of the root's CloudWatch alarms."
  value       = aws_sns_topic.alarms.arn
}

output "workspace_arn" {
  description = "ARN of the Prometheus workspace."
  value       = aws_prometheus_workspace.this.arn
}

output "workspace_id" {
  description = "ID of the Prometheus workspace (awscurl and Grafana's data source name it)."
  value       = aws_prometheus_workspace.this.id
}

output "remote_write_url" {
  description = "URL the collectors remote-write to (<prometheus_endpoint>api/v1/remote_write), through the VPC's aps-workspaces endpoint."
  value       = "${aws_prometheus_workspace.this.prometheus_endpoint}api/v1/remote_write"
}

output "query_url" {
  description = "Prometheus query API of the workspace (<prometheus_endpoint>api/v1/query), signed with SigV4 (service aps)."
  value       = "${aws_prometheus_workspace.this.prometheus_endpoint}api/v1/query"
}

output "kms_key_arn" {
  description = "ARN of the key of the topic, the workspace and the log groups."
  value       = aws_kms_key.this.arn
}

output "collector" {
  description = "What modules/fleet's monitoring input takes: the workspace to write to, the collectors' binaries and scraper certificate, and the log groups' key and retention."
  value = {
    region                  = var.region
    workspace_arn           = aws_prometheus_workspace.this.arn
    remote_write_url        = "${aws_prometheus_workspace.this.prometheus_endpoint}api/v1/remote_write"
    prometheus_s3_uri       = var.prometheus_s3_uri
    cloudwatch_agent_s3_uri = var.cloudwatch_agent_s3_uri
    scraper_cert_s3_uri     = var.scraper_cert_s3_uri
    scraper_key_s3_uri      = var.scraper_key_s3_uri
    log_kms_key_arn         = aws_kms_key.this.arn
    log_retention_days      = var.log_retention_days
  }
}

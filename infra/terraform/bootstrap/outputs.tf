output "bucket" {
  description = "Name of the state bucket."
  value       = aws_s3_bucket.state.id
}

output "lock_table" {
  description = "Name of the lock table."
  value       = aws_dynamodb_table.lock.name
}

output "kms_key_arn" {
  description = "ARN of the KMS key of the state objects and the lock table."
  value       = aws_kms_key.state.arn
}

output "backend_config" {
  description = "The s3 backend's settings of this region's roots (partial configuration, without the key): terraform output -raw backend_config > ../backend.<region>.hcl. idgenctl infra picks the file of a root's region and adds the root's key."
  value       = <<-EOT
    bucket         = "${aws_s3_bucket.state.id}"
    region         = "${var.region}"
    dynamodb_table = "${aws_dynamodb_table.lock.name}"
    encrypt        = true
    kms_key_id     = "${aws_kms_key.state.arn}"
  EOT
}

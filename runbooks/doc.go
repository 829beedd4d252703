// Package runbooks holds no code: it is the test harness of the runbooks in this folder. The test
// parses every runbooks/**/*.md and runs each block fenced as "sh run" in bash (set -euo
// pipefail) against a local stack it starts (registry, generators for us-east-1 and eu-west-1 on
// dynalite, the public-ID service on Redis), checking the output against the "text expect" block
// that follows it. See README.md, "How the runbooks are tested".
package runbooks

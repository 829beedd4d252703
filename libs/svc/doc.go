// Package svc holds what idgen's services share at their edges: caller identities from mutual
// TLS (package auth) and per-caller quotas (package quota).
package svc

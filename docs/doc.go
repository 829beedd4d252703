// Package docs holds idgen's design documents (the Markdown files of this folder) and the test
// that keeps every reference to them valid: no pointer to a file outside the repository, no link
// or "docs/<page>.md#<section>" reference to a missing page or heading, and no page missing from
// the index (README.md).
package docs

//go:build proctest

package main

func init() { tagged = true }

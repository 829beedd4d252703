// Package conn holds no code: its packages are the connection helpers that the stores of every
// service share, so that a DSN, a DynamoDB client or a CA pool is built the same way everywhere.
//
//   - sqlitedsn: the one SQLite DSN (WAL, busy timeout, full sync, immediate transactions).
//   - dynamo: a DynamoDB client from the standard AWS chain, with local-server defaults.
//   - tlsca: a CA pool from a PEM file.
package conn

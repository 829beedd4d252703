// Package scan is the gateway's scanner of internal IDs: the spellings an upstream can write a
// 64-bit ID in, as one table (Table), and the three things it drives.
//
//   - Scanner, the detector of unknown IDs: every reader of the table finds values in a text,
//     and a value in the window of IDs issued (New's lo and hi) is an internal ID;
//   - Known, the own-ID check: a response's own IDs written in every entry's forms and found
//     anywhere, and read by the entries' readers without the window;
//   - Normalize, the normal form every reader also reads (percent-escapes, HTML character
//     references, NFKC, invisible characters, Unicode digits and spaces).
//
// The tests' oracle (internal/leakcheck) writes IDs with every entry's encoders, and the
// README's list of what the gateway refuses is Markdown's rendering of the table
// (TestREADMESpellings). Adding a spelling is adding an entry: its name and doc (the README's
// line), its encoders, its reader and its forms. Every pass of every reader is linear in the
// length of the text it reads.
package scan

//go:generate go test -run TestREADMESpellings -update .

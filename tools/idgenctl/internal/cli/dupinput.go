package cli

// The inputs of dupcheck: one ID per line, or a CSV column, parsed without allocating per line.

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"
)

// inputError is unreadable input: exit 2, naming the file and line.
func inputError(format string, a ...any) error {
	return exitError{code: 2, msg: "dupcheck: " + fmt.Sprintf(format, a...)}
}

// parseID parses a decimal ID from bytes without allocating: digits only, at most 2^63−1.
func parseID(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	if v > 1<<63-1 {
		return 0, false
	}
	return int64(v), true
}

func quoteShort(b []byte) string {
	if len(b) > 40 {
		return fmt.Sprintf("%q…", b[:40])
	}
	return fmt.Sprintf("%q", b)
}

// readLines feeds one ID per line (blank lines skipped) to add.
func readLines(r io.Reader, file string, add func(int64) error) (int64, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	var line, n int64
	for {
		b, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			return n, inputError("%s:%d: line longer than 1 MiB: not one ID per line (CSV needs --column NAME)", file, line+1)
		}
		if len(b) > 0 {
			line++
			t := trimSpace(b)
			if len(t) > 0 {
				id, ok := parseID(t)
				if !ok {
					hint := ""
					if strings.Contains(string(t), ",") {
						hint = " (CSV needs --column NAME)"
					}
					return n, inputError("%s:%d: not an ID: %s%s", file, line, quoteShort(t), hint)
				}
				if err := add(id); err != nil {
					return n, err
				}
				n++
			}
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, inputError("%s:%d: %v", file, line+1, err)
		}
	}
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r' || b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	return b
}

// readCSV feeds the IDs of column to add; the first record is the header.
func readCSV(r io.Reader, file, column string, add func(int64) error) (int64, error) {
	cr := csv.NewReader(bufio.NewReaderSize(r, 1<<20))
	cr.ReuseRecord = true
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if err == io.EOF {
		return 0, inputError("%s:1: empty file: no header naming column %q", file, column)
	}
	if err != nil {
		return 0, inputError("%s: %v", file, err)
	}
	col := -1
	var names []string
	for i, h := range header {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		names = append(names, h)
		if h == column {
			col = i
		}
	}
	if col < 0 {
		return 0, inputError("%s:1: no column %q in the header (columns: %s)", file, column, strings.Join(names, ", "))
	}
	var n int64
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return n, nil
		}
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			return n, inputError("%s:%d: column %d: %v", file, pe.Line, pe.Column, pe.Err)
		}
		if err != nil {
			return n, inputError("%s: %v", file, err)
		}
		line, _ := cr.FieldPos(0)
		if col >= len(rec) {
			return n, inputError("%s:%d: %d fields, no column %q", file, line, len(rec), column)
		}
		v := strings.TrimSpace(rec[col])
		id, ok := parseID([]byte(v))
		if !ok {
			line, _ = cr.FieldPos(col)
			return n, inputError("%s:%d: column %q is not an ID: %s", file, line, column, quoteShort([]byte(v)))
		}
		if err := add(id); err != nil {
			return n, err
		}
		n++
	}
}

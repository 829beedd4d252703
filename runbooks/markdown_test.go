package runbooks

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// block is one fenced code block of a runbook.
type block struct {
	file   string
	line   int // the line of the opening fence
	info   string
	body   string
	expect *block // the "text expect" block that follows a "sh run" block
}

func (b block) runnable() bool { return b.info == "sh run" }

func (b block) where() string { return fmt.Sprintf("runbooks/%s:%d", b.file, b.line) }

// parse reads the fenced blocks of a Markdown file. A "text expect" block belongs to the "sh run"
// block before it, with no other fenced block between them.
func parse(path string) ([]block, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var blocks []block
	var cur *block
	var body strings.Builder
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if cur == nil {
			if rest, ok := strings.CutPrefix(trimmed, "```"); ok {
				cur = &block{file: path, line: n, info: strings.Join(strings.Fields(rest), " ")}
				body.Reset()
			}
			continue
		}
		if trimmed == "```" {
			cur.body = body.String()
			blocks = append(blocks, *cur)
			cur = nil
			continue
		}
		body.WriteString(line + "\n")
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if cur != nil {
		return nil, fmt.Errorf("runbooks/%s:%d: code block never closed", path, cur.line)
	}
	var out []block
	for i := 0; i < len(blocks); i++ {
		b := blocks[i]
		if b.info == "text expect" {
			return nil, fmt.Errorf("%s: a text expect block must follow a sh run block", b.where())
		}
		if b.runnable() && i+1 < len(blocks) && blocks[i+1].info == "text expect" {
			e := blocks[i+1]
			b.expect = &e
			i++
		}
		out = append(out, b)
	}
	return out, nil
}

// runbookFiles returns every runbooks/**/*.md, the top folder first, each folder sorted.
func runbookFiles() ([]string, error) {
	var files []string
	err := filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, p)
		}
		return nil
	})
	slices.SortFunc(files, func(a, b string) int {
		if da, db := strings.Count(a, "/"), strings.Count(b, "/"); da != db {
			return da - db
		}
		return strings.Compare(a, b)
	})
	return files, err
}

// matchExpect checks that each non-empty line of the expect block matches, in order, a line of
// the output, where "..." matches any text and the rest is literal. It returns the file line of
// the first expected line not found, or 0.
func matchExpect(e *block, output string) (int, string) {
	outLines := strings.Split(output, "\n")
	for i := range outLines {
		outLines[i] = strings.TrimRight(outLines[i], " \t\r")
	}
	pos := 0
	for i, pl := range strings.Split(e.body, "\n") {
		pl = strings.TrimRight(pl, " \t\r")
		if strings.TrimSpace(pl) == "" {
			continue
		}
		parts := strings.Split(pl, "...")
		for j := range parts {
			parts[j] = regexp.QuoteMeta(parts[j])
		}
		re := regexp.MustCompile("^" + strings.Join(parts, ".*") + "$")
		found := false
		for pos < len(outLines) {
			ok := re.MatchString(outLines[pos])
			pos++
			if ok {
				found = true
				break
			}
		}
		if !found {
			return e.line + 1 + i, pl
		}
	}
	return 0, ""
}

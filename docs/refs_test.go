package docs

import (
	"bufio"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode"
)

// skipDirs are never walked: version control, installed tools, npm packages and the local stack's
// state.
var skipDirs = map[string]bool{".git": true, ".tools": true, "node_modules": true, ".idgen": true}

// checkedExt are the kinds of file whose text is checked (and Makefile).
var checkedExt = map[string]bool{
	".go": true, ".md": true, ".pml": true, ".tf": true, ".tftpl": true, ".sh": true, ".proto": true,
	".yml": true, ".yaml": true, ".json": true,
}

func checkedFile(name string) bool {
	return name == "Makefile" || name == "go.mod" || name == "go.work" || checkedExt[filepath.Ext(name)]
}

// climbing is a relative path that starts by going up (../x, ../../x/y): in Go, Terraform, proto,
// JSON, YAML, go.mod and go.work files it is resolved against its file's folder (as Go tests,
// Terraform module sources and replace lines resolve it) and must stay inside the repository.
// Markdown, shell scripts and the Makefile are left out: their paths are relative to wherever
// their commands cd, and Markdown links are checked on their own; so are this package's tests,
// which plant bad references on purpose.
var climbing = regexp.MustCompile(`(?:^|[^\w./-])((?:\.\./)+[\w.-]+(?:/[\w.-]+)*)`)

// outside are references to files that exist on no clone of the repository. They are spelled in
// pieces so that this file does not contain them.
var outside = []string{"../" + "shared", "/work/" + "shared", "SPEC" + ".md", "SPEC" + " §"}

// docsRef is a reference to a page of docs/ with an optional section, in any checked file:
// docs/leases.md#the-fence (or ../docs/leases.md#the-fence from a subfolder's Markdown). The page
// is group 1, the "#section" group 2.
var docsRef = regexp.MustCompile(`(?:^|[^\w./-])(?:\.\.?/)*docs/([\w-]+\.md)(#[\w-]*)?`)

// mdLink is a Markdown link or image, [text](target "title"); the target is group 1.
var mdLink = regexp.MustCompile(`\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)

// codeSpan is inline code, whose text is never a link.
var codeSpan = regexp.MustCompile("`+[^`]*`+")

// scheme starts an absolute URL (https:, mailto:), which is not checked.
var scheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)

var (
	atxHeading = regexp.MustCompile(`^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$`)
	htmlAnchor = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
	inlineLink = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	htmlTag    = regexp.MustCompile(`<[^>]+>`)
)

// slug is GitHub's anchor for a heading: the heading's text, lower case, with every character
// that is not a letter, a digit, a space, '-' or '_' dropped, and each space turned into '-'.
func slug(heading string) string {
	heading = inlineLink.ReplaceAllString(heading, "$1")
	heading = htmlTag.ReplaceAllString(heading, "")
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-', r == '_', unicode.IsLetter(r), unicode.IsNumber(r), unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// isFence reports whether a Markdown line opens or closes a fenced code block.
func isFence(line string) bool {
	t := strings.TrimSpace(line)
	return strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~")
}

// problem is one bad reference: where it is and what is wrong.
type problem struct {
	file string // relative to the repository root, with '/'
	line int
	msg  string
}

func (p problem) String() string { return fmt.Sprintf("%s:%d: %s", p.file, p.line, p.msg) }

// checker checks the references of one repository.
type checker struct {
	root     string
	anchors  map[string]map[string]bool // by absolute path of a Markdown file
	problems []problem
}

func (c *checker) rel(path string) string {
	r, err := filepath.Rel(c.root, path)
	if err != nil {
		return path
	}
	return filepath.ToSlash(r)
}

func (c *checker) report(file string, line int, format string, args ...any) {
	c.problems = append(c.problems, problem{c.rel(file), line, fmt.Sprintf(format, args...)})
}

// sections returns the anchors of a Markdown file: its headings' slugs (a repeated slug gets -1,
// -2, … as on GitHub) and its explicit <a name> / <a id> anchors.
func (c *checker) sections(path string) (map[string]bool, error) {
	if a, ok := c.anchors[path]; ok {
		return a, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	a, seen, fenced := map[string]bool{}, map[string]int{}, false
	for _, line := range strings.Split(string(b), "\n") {
		if isFence(line) {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			a[m[1]] = true
		}
		m := atxHeading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		s := slug(m[1])
		if n := seen[s]; n > 0 {
			a[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			a[s] = true
		}
		seen[s]++
	}
	c.anchors[path] = a
	return a, nil
}

// checkTarget checks that target (an absolute path, possibly a folder) exists inside the
// repository and, when anchor is not empty, that it has that section. ref is the reference as
// written, for the message.
func (c *checker) checkTarget(file string, line int, ref, target, anchor string) {
	if r, err := filepath.Rel(c.root, target); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		c.report(file, line, "%q points outside the repository", ref)
		return
	}
	st, err := os.Stat(target)
	if err != nil {
		c.report(file, line, "%q: %s does not exist", ref, c.rel(target))
		return
	}
	if anchor == "" {
		return
	}
	if st.IsDir() {
		target = filepath.Join(target, "README.md")
		if _, err := os.Stat(target); err != nil {
			c.report(file, line, "%q: section #%s of a folder without README.md", ref, anchor)
			return
		}
	}
	if !strings.HasSuffix(target, ".md") {
		return // anchors into code (#L10) are GitHub's, not a heading
	}
	secs, err := c.sections(target)
	if err != nil {
		c.report(file, line, "%q: %v", ref, err)
		return
	}
	if !secs[anchor] {
		have := make([]string, 0, len(secs))
		for s := range secs {
			have = append(have, "#"+s)
		}
		sort.Strings(have)
		c.report(file, line, "%q: %s has no section #%s (it has %s)", ref, c.rel(target), anchor, strings.Join(have, " "))
	}
}

// linkTargets returns the Markdown links of a line (outside inline code), absolute URLs left out.
func linkTargets(line string) []string {
	line = codeSpan.ReplaceAllString(line, "")
	var out []string
	for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
		if !scheme.MatchString(m[1]) {
			out = append(out, m[1])
		}
	}
	return out
}

// resolve turns a Markdown link target of file into an absolute path and an anchor.
func (c *checker) resolve(file, target string) (string, string) {
	p, anchor, _ := strings.Cut(target, "#")
	if u, err := url.PathUnescape(p); err == nil {
		p = u
	}
	switch {
	case p == "":
		return file, anchor
	case strings.HasPrefix(p, "/"):
		return filepath.Join(c.root, filepath.FromSlash(p)), anchor
	}
	return filepath.Join(filepath.Dir(file), filepath.FromSlash(p)), anchor
}

func climbChecked(rel string) bool {
	base := filepath.Base(rel)
	switch {
	case base == "Makefile", strings.HasSuffix(base, ".md"), strings.HasSuffix(base, ".sh"):
		return false
	case filepath.Dir(rel) == "docs" && strings.HasSuffix(base, "_test.go"):
		return false
	}
	return true
}

func (c *checker) checkFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	markdown := strings.HasSuffix(path, ".md")
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	n, fenced := 0, false
	for sc.Scan() {
		n++
		line := sc.Text()
		for _, s := range outside {
			if strings.Contains(line, s) {
				c.report(path, n, "refers to %q, which is not in the repository: point to a section of docs/ instead", s)
			}
		}
		if climbChecked(c.rel(path)) {
			for _, m := range climbing.FindAllStringSubmatch(line, -1) {
				target := filepath.Join(filepath.Dir(path), filepath.FromSlash(m[1]))
				if r, err := filepath.Rel(c.root, target); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
					c.report(path, n, "%q points outside the repository", m[1])
				}
			}
		}
		bare := line
		if markdown {
			// A Markdown link's target is checked below, relative to its file.
			bare = mdLink.ReplaceAllString(line, "[]()")
		}
		for _, m := range docsRef.FindAllStringSubmatch(bare, -1) {
			ref := "docs/" + m[1] + m[2]
			anchor, hasAnchor := strings.CutPrefix(m[2], "#")
			if hasAnchor && anchor == "" {
				c.report(path, n, "%q: empty section name", ref)
				continue
			}
			c.checkTarget(path, n, ref, filepath.Join(c.root, "docs", m[1]), anchor)
		}
		if !markdown {
			continue
		}
		if isFence(line) {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for _, t := range linkTargets(line) {
			target, anchor := c.resolve(path, t)
			c.checkTarget(path, n, t, target, anchor)
		}
	}
	return sc.Err()
}

// checkIndex checks that docs/README.md links every other page of docs/.
func (c *checker) checkIndex() error {
	docs := filepath.Join(c.root, "docs")
	index := filepath.Join(docs, "README.md")
	b, err := os.ReadFile(index)
	if err != nil {
		c.report(index, 0, "the index of docs/ is missing")
		return nil
	}
	linked := map[string]bool{}
	fenced := false
	for _, line := range strings.Split(string(b), "\n") {
		if isFence(line) {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for _, t := range linkTargets(line) {
			p, _ := c.resolve(index, t)
			linked[filepath.Clean(p)] = true
		}
	}
	pages, err := filepath.Glob(filepath.Join(docs, "*.md"))
	if err != nil {
		return err
	}
	for _, p := range pages {
		if p != index && !linked[filepath.Clean(p)] {
			c.report(index, 1, "docs/%s is not linked from the index", filepath.Base(p))
		}
	}
	return nil
}

// check walks the repository at root and returns every bad reference, in file and line order.
func check(root string) ([]problem, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	c := &checker{root: root, anchors: map[string]map[string]bool{}}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && skipDirs[d.Name()] {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !checkedFile(d.Name()) {
			return nil
		}
		return c.checkFile(path)
	})
	if err != nil {
		return nil, err
	}
	if err := c.checkIndex(); err != nil {
		return nil, err
	}
	slices.SortStableFunc(c.problems, func(a, b problem) int {
		if a.file != b.file {
			return strings.Compare(a.file, b.file)
		}
		return a.line - b.line
	})
	return c.problems, nil
}

// repoRoot is the repository this module sits in: the parent of docs/.
func repoRoot() (string, error) {
	root, err := filepath.Abs("..")
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(root, "go.work")); err != nil {
		return "", fmt.Errorf("the parent of docs/ should be the repository root (with go.work): %w", err)
	}
	return root, nil
}

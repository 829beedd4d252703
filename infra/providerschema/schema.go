// Package providerschema is the AWS provider's configuration schema, read offline from the npm
// package @cdktf/provider-aws (CDKTF bindings generated from the provider's own schema: version
// 20.1.0 is generated from registry.terraform.io/hashicorp/aws 5.100.0), and a check of
// Terraform files against it: every resource and data source type exists, every argument and
// nested block (inside dynamic blocks too) exists at its level, required ones are present, and
// every aws_x.name.attr reference names an attribute the type has.
//
// The package is large (about 360 MB), so Load reads only what the check needs: from the .jsii
// manifest each configuration struct's properties and whether they are optional, and from each
// lib/*/index.js the Terraform names of the arguments (with isBlock, from the …ToHclTerraform
// functions) and of the attributes the resource class reads. The result is cached as JSON under
// .tools/provider-schema, keyed by the package's version and this extractor's format.
package providerschema

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
)

// Package is the npm package the schema is read from; PackageDir is where npm installs it,
// relative to the repository root.
const (
	Package    = "@cdktf/provider-aws"
	PackageDir = "node_modules/@cdktf/provider-aws"
	// CacheDir holds the extracted schemas, relative to the repository root.
	CacheDir = ".tools/provider-schema"
	// format changes whenever the extraction or the JSON layout does, so an old cache is not read.
	format = 1
)

// Schema is the configuration schema of one provider version.
type Schema struct {
	Format int `json:"format"`
	// Package and PackageVersion: the npm package it was read from.
	Package        string `json:"package"`
	PackageVersion string `json:"package_version"`
	// Provider and ProviderVersion: the provider the package was generated from.
	Provider        string `json:"provider"`
	ProviderVersion string `json:"provider_version"`
	// ProviderConfig is the provider block's own schema.
	ProviderConfig *Block            `json:"provider_config"`
	Resources      map[string]*Block `json:"resources"`
	DataSources    map[string]*Block `json:"data_sources"`
}

// Block is a resource's, data source's or nested block's schema.
type Block struct {
	// Args are the arguments (name = value), each true when required.
	Args map[string]bool `json:"args,omitempty"`
	// Blocks are the nested blocks (name { … }).
	Blocks map[string]*Nested `json:"blocks,omitempty"`
	// Attrs, on a resource or data source, are the names a reference may read: its arguments,
	// its blocks and its computed attributes.
	Attrs []string `json:"attrs,omitempty"`
}

// Nested is a nested block type.
type Nested struct {
	Required bool `json:"required,omitempty"`
	Block
}

// HasAttr reports whether a resource or data source has an attribute of that name.
func (b *Block) HasAttr(name string) bool {
	i := sort.SearchStrings(b.Attrs, name)
	return i < len(b.Attrs) && b.Attrs[i] == name
}

// Load returns the schema of the package installed under root/node_modules, from the cache
// under root/.tools when it is there for the installed version, else extracted (and cached).
func Load(root string) (*Schema, error) {
	dir := filepath.Join(root, PackageDir)
	pkg, err := readPackageJSON(dir)
	if err != nil {
		return nil, err
	}
	cache := filepath.Join(root, CacheDir, fmt.Sprintf("aws-%s.format%d.json", pkg.Version, format))
	if b, err := os.ReadFile(cache); err == nil {
		var s Schema
		if err := json.Unmarshal(b, &s); err == nil && s.Format == format && s.PackageVersion == pkg.Version {
			return &s, nil
		}
	}
	s, err := Extract(dir)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(cache), 0o755); err != nil {
		return nil, err
	}
	// Written whole, then renamed: a concurrent reader sees the old file or the new one.
	tmp, err := os.CreateTemp(filepath.Dir(cache), ".schema-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return nil, err
	}
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return nil, err
	}
	return s, os.Rename(tmp.Name(), cache)
}

type packageJSON struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Cdktf   struct {
		Provider struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"provider"`
	} `json:"cdktf"`
}

func readPackageJSON(dir string) (*packageJSON, error) {
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("providerschema: %s is not installed in %s: run make setup (it installs the version package-lock.json pins)", Package, filepath.Dir(filepath.Dir(dir)))
	}
	if err != nil {
		return nil, err
	}
	var p packageJSON
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("providerschema: %s/package.json: %w", dir, err)
	}
	if p.Name != Package || p.Version == "" || p.Cdktf.Provider.Version == "" {
		return nil, fmt.Errorf("providerschema: %s/package.json is not %s with a cdktf.provider version", dir, Package)
	}
	return &p, nil
}

// jsiiTypes is the part of the .jsii manifest the extraction reads: per struct, its properties
// and whether each is optional.
type jsiiTypes struct {
	Types map[string]struct {
		Kind       string `json:"kind"`
		Datatype   bool   `json:"datatype"`
		Properties []struct {
			Name     string `json:"name"`
			Optional bool   `json:"optional"`
		} `json:"properties"`
	} `json:"types"`
}

// Extract reads the schema from the package installed in dir.
func Extract(dir string) (*Schema, error) {
	pkg, err := readPackageJSON(dir)
	if err != nil {
		return nil, err
	}
	m, err := readJSII(filepath.Join(dir, ".jsii"))
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(dir, "lib", "*", "index.js"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("providerschema: no lib/*/index.js in %s", dir)
	}
	s := &Schema{
		Format: format, Package: pkg.Name, PackageVersion: pkg.Version,
		Provider: pkg.Cdktf.Provider.Name, ProviderVersion: pkg.Cdktf.Provider.Version,
		Resources: map[string]*Block{}, DataSources: map[string]*Block{},
	}
	type result struct {
		f   *jsFile
		err error
	}
	results := make([]result, len(files))
	var wg sync.WaitGroup
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f, err := readJSFile(files[i], m)
				results[i] = result{f, err}
			}
		}()
	}
	for i := range files {
		next <- i
	}
	close(next)
	wg.Wait()
	for i, r := range results {
		switch {
		case r.err != nil:
			return nil, fmt.Errorf("providerschema: %s: %w", files[i], r.err)
		case r.f == nil:
			// a file of shared structs, no resource class
		case r.f.kind == "TerraformProvider":
			s.ProviderConfig = r.f.block
		case r.f.kind == "TerraformDataSource":
			s.DataSources[r.f.typ] = r.f.block
		default:
			s.Resources[r.f.typ] = r.f.block
		}
	}
	if s.ProviderConfig == nil || len(s.Resources) == 0 || len(s.DataSources) == 0 {
		return nil, fmt.Errorf("providerschema: %s: found %d resources, %d data sources and %v provider block: not the package layout this extractor reads", dir, len(s.Resources), len(s.DataSources), s.ProviderConfig != nil)
	}
	return s, nil
}

// manifest is what the extraction keeps of the .jsii manifest.
type manifest struct {
	// optional: per struct ("namespace.Name"), its properties and whether each is optional.
	optional map[string]map[string]bool
	// namespaces: each namespace (one per folder of lib/) by its name in lower case.
	namespaces map[string]string
}

// readJSII reads the structs of the .jsii manifest.
func readJSII(path string) (*manifest, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var j jsiiTypes
	if err := json.NewDecoder(bufio.NewReaderSize(f, 1<<20)).Decode(&j); err != nil {
		return nil, fmt.Errorf("providerschema: %s: %w", path, err)
	}
	out := &manifest{optional: make(map[string]map[string]bool, len(j.Types)/2), namespaces: map[string]string{}}
	for fqn, t := range j.Types {
		if t.Kind != "interface" || !t.Datatype {
			continue
		}
		// @cdktf/provider-aws.<namespace>.<Name>
		parts := strings.Split(fqn, ".")
		if len(parts) != 3 {
			continue
		}
		props := make(map[string]bool, len(t.Properties))
		for _, p := range t.Properties {
			props[p.Name] = p.Optional
		}
		out.optional[parts[1]+"."+parts[2]] = props
		out.namespaces[strings.ToLower(parts[1])] = parts[1]
	}
	return out, nil
}

var (
	classLine = regexp.MustCompile(`^class (\w+) extends cdktf\.(TerraformResource|TerraformDataSource|TerraformProvider) \{`)
	typeLine  = regexp.MustCompile(`^\s*terraformResourceType: '([a-z0-9_]+)',`)
	entryLine = regexp.MustCompile(`^\s+"?([A-Za-z0-9_]+)"?: \{$`)
	// A nested struct's own function in a value (maybe from another file of the package,
	// index_structs_1.fooToHclTerraform), not cdktf's (cdktf.stringToHclTerraform).
	nestedFunc = regexp.MustCompile(`(?:\b(\w+)\.)?\b([a-z]\w*)ToHclTerraform\b`)
	// The struct property a value reads: struct.name or this._name.
	propRef = regexp.MustCompile(`(?:struct\.|this\._)(\w+)`)
	// The attributes a resource class reads, and its nested lists and objects.
	readAttr = regexp.MustCompile(`(?:get\w*Attribute|interpolationForAttribute)\('([^']+)'\)`)
	newChild = regexp.MustCompile(`new [\w.]+\(this, "([^"]+)"`)
	// The constructor's copy of a configuration property into a field (the two names may differ:
	// this._getPasswordData = config.fetchPasswordData).
	// The constructor's documented configuration struct: usually <Class>Config, but
	// Wafv2WebAclAssociationConfigA where a nested struct of another resource took that name.
	configParam = regexp.MustCompile(`^\s*\* @param options (\w+)`)
	fromConfig  = regexp.MustCompile(`^\s+this\._(\w+)(?:\.internalValue)? = config\.(\w+);`)
)

// hclFunc returns the struct of a line that starts a nested struct's function
// (function fooToHclTerraform(struct) {), else "".
func hclFunc(l string) string {
	name, ok := strings.CutPrefix(l, "function ")
	if !ok {
		return ""
	}
	name, ok = strings.CutSuffix(name, "ToHclTerraform(struct) {")
	if !ok {
		return ""
	}
	return name
}

type jsFile struct {
	kind, typ string
	block     *Block
}

// entry is one argument or block of a …ToHclTerraform function.
type entry struct {
	name, prop, nested string
	isBlock            bool
}

// readJSFile reads one resource's, data source's or the provider's index.js, and the files its
// structs were split into (index-structs/structs*.js) when there are many.
func readJSFile(path string, m *manifest) (*jsFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	funcs := map[string][]entry{} // nested struct function (lower camel) => entries
	more, err := filepath.Glob(filepath.Join(filepath.Dir(path), "index-structs", "structs*.js"))
	if err != nil {
		return nil, err
	}
	for _, p := range more {
		sb, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		lines := strings.Split(string(sb), "\n")
		for i := 0; i < len(lines); i++ {
			if f := hclFunc(lines[i]); f != "" {
				var es []entry
				es, i = readAttrs(lines, i, "}")
				funcs[f] = es
			}
		}
	}
	// Most lines are none of these: each regular expression runs only on lines that can match.
	lines := strings.Split(string(b), "\n")
	var class, kind, typ string
	var top []entry
	var attrs []string
	fields := map[string]string{} // this._field => config property
	config := ""                  // the configuration struct's name
	inClass, synth := false, false
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, "class ") {
			if m := classLine.FindStringSubmatch(l); m != nil {
				class, kind, inClass = m[1], m[2], true
			}
			continue
		}
		if f := hclFunc(l); f != "" {
			var es []entry
			es, i = readAttrs(lines, i, "}")
			funcs[f] = es
			continue
		}
		if !inClass {
			continue
		}
		switch {
		case strings.Contains(l, "terraformResourceType: '"):
			if m := typeLine.FindStringSubmatch(l); m != nil && typ == "" {
				typ = m[1]
			}
		case strings.HasSuffix(l, "synthesizeHclAttributes() {"):
			top, i = readAttrs(lines, i, "    }")
			synth = true
		case strings.Contains(l, "@param options "):
			if m := configParam.FindStringSubmatch(l); m != nil && config == "" {
				config = m[1]
			}
		case strings.Contains(l, " = config."):
			if m := fromConfig.FindStringSubmatch(l); m != nil {
				fields[m[1]] = m[2]
			}
		case strings.Contains(l, "Attribute('"):
			for _, m := range readAttr.FindAllStringSubmatch(l, -1) {
				attrs = append(attrs, m[1])
			}
		case strings.Contains(l, "(this, \""):
			for _, m := range newChild.FindAllStringSubmatch(l, -1) {
				attrs = append(attrs, m[1])
			}
		}
	}
	if class == "" {
		return nil, nil
	}
	if typ == "" || !synth {
		return nil, fmt.Errorf("class %s: no terraformResourceType or synthesizeHclAttributes", class)
	}
	if kind == "TerraformProvider" {
		// alias is a meta-argument of every provider block, not part of its schema.
		top = without(top, "alias")
	}
	for i, e := range top {
		if p, ok := fields[e.prop]; ok {
			top[i].prop = p
		}
	}
	// The namespace is the folder's name in camel case (lexv2models-intent: lexv2ModelsIntent).
	ns, ok := m.namespaces[strings.ReplaceAll(filepath.Base(filepath.Dir(path)), "-", "")]
	if !ok || config == "" {
		return nil, fmt.Errorf("class %s: no namespace or configuration struct in the .jsii manifest", class)
	}
	blk, err := build(top, config, ns, funcs, m.optional, map[string]bool{})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", typ, err)
	}
	seen := map[string]bool{}
	for n := range blk.Args {
		seen[n] = true
	}
	for n := range blk.Blocks {
		seen[n] = true
	}
	for _, a := range attrs {
		seen[a] = true
	}
	for n := range seen {
		blk.Attrs = append(blk.Attrs, n)
	}
	sort.Strings(blk.Attrs)
	return &jsFile{kind: kind, typ: typ, block: blk}, nil
}

// without returns the entries but the one of that name.
func without(es []entry, name string) []entry {
	out := es[:0]
	for _, e := range es {
		if e.name != name {
			out = append(out, e)
		}
	}
	return out
}

// readAttrs reads the `const attrs = { … };` of the function or method starting at line i, and
// returns its entries and the index of its last line; end is the line that closes the function
// or method ("}" or "    }").
func readAttrs(lines []string, i int, end string) ([]entry, int) {
	var out []entry
	in := false
	for i++; i < len(lines); i++ {
		l := lines[i]
		t := strings.TrimSpace(l)
		switch {
		case !in && t == "const attrs = {":
			in = true
		case !in && t == "const attrs = {};":
			return out, i
		case !in && l == end:
			return out, i
		case in && t == "};":
			return out, i
		case in:
			if !strings.HasSuffix(l, ": {") {
				continue
			}
			m := entryLine.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			e := entry{name: m[1]}
			for i++; i < len(lines); i++ {
				t := strings.TrimSpace(lines[i])
				if t == "}," || t == "}" {
					break
				}
				if v, ok := strings.CutPrefix(t, "value: "); ok {
					if p := propRef.FindStringSubmatch(v); p != nil {
						e.prop = p[1]
					}
					for _, n := range nestedFunc.FindAllStringSubmatch(v, -1) {
						if n[1] != "cdktf" {
							e.nested = n[2]
						}
					}
				}
				if t == "isBlock: true," {
					e.isBlock = true
				}
			}
			out = append(out, e)
		}
	}
	return out, i
}

// build makes the Block of a struct from its entries: required-ness from the .jsii struct, nested
// blocks from their own functions.
func build(es []entry, structName, ns string, funcs map[string][]entry, optional map[string]map[string]bool, visiting map[string]bool) (*Block, error) {
	props, ok := optional[ns+"."+structName]
	if !ok {
		return nil, fmt.Errorf("no struct %s.%s in the .jsii manifest", ns, structName)
	}
	if visiting[structName] {
		return &Block{}, nil // a recursive block: its first level is enough
	}
	visiting[structName] = true
	defer delete(visiting, structName)
	b := &Block{}
	for _, e := range es {
		opt, known := props[e.prop]
		if !known {
			return nil, fmt.Errorf("%s.%s: argument %s reads property %q, which the .jsii struct does not have", ns, structName, e.name, e.prop)
		}
		if !e.isBlock {
			if b.Args == nil {
				b.Args = map[string]bool{}
			}
			b.Args[e.name] = !opt
			continue
		}
		inner, ok := funcs[e.nested]
		if !ok {
			return nil, fmt.Errorf("%s.%s: block %s: no function %sToHclTerraform", ns, structName, e.name, e.nested)
		}
		// dynamodbTableAttribute => DynamodbTableAttribute
		nb, err := build(inner, strings.ToUpper(e.nested[:1])+e.nested[1:], ns, funcs, optional, visiting)
		if err != nil {
			return nil, err
		}
		if b.Blocks == nil {
			b.Blocks = map[string]*Nested{}
		}
		b.Blocks[e.name] = &Nested{Required: !opt, Block: *nb}
	}
	return b, nil
}

// FindRoot returns the repository root: dir or the first parent of it with a go.work.
func FindRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.work")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("providerschema: no go.work in %s or above it", dir)
		}
	}
}

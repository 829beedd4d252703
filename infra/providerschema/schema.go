// Package providerschema is the AWS provider's configuration schema, read offline from the npm
// package @cdktf/provider-aws (CDKTF bindings generated from the provider's own schema: version
// 20.1.0 is generated from registry.terraform.io/hashicorp/aws 5.100.0), and a check of
// Terraform files against it.
//
// The schema is read as data from the package's .jsii manifest, the jsii type system of the
// bindings: each resource and data source is a class whose constructor takes a *Config struct;
// each struct property is an argument (its type primitive, a list or map of one, or a struct)
// or a nested block (a struct, or an array of structs), optional or not; a block given as a
// single struct holds at most one. The Terraform name of each argument and block is the anchor
// of the registry link in the property's documentation. The class's read-only getters that no
// struct property sets are the computed-only attributes; the manifest documents no Terraform
// name for them, so theirs is the getter's name converted to snake case (Derived). Nested
// blocks' computed attributes come in the same way from their *OutputReference classes.
//
// The result is cached as JSON under .tools/provider-schema, keyed by the package's version and
// this extractor's format.
package providerschema

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode"

	"github.com/zclconf/go-cty/cty"
)

// Package is the npm package the schema is read from; PackageDir is where npm installs it,
// relative to the repository root.
const (
	Package    = "@cdktf/provider-aws"
	PackageDir = "node_modules/@cdktf/provider-aws"
	// CacheDir holds the extracted schemas, relative to the repository root.
	CacheDir = ".tools/provider-schema"
	// format changes whenever the extraction or the JSON layout does, so an old cache is not read.
	format = 2
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
	// Attrs are the attributes: the arguments (name = value) and the computed-only ones.
	Attrs map[string]*Attribute `json:"attrs,omitempty"`
	// Blocks are the nested blocks (name { … }).
	Blocks map[string]*Nested `json:"blocks,omitempty"`
	// Opaque: the package does not describe the block's content (cdktf gives deeply nested
	// blocks, as wafv2's statement, the type any), so it is not checked.
	Opaque bool `json:"opaque,omitempty"`
}

// Attribute is one attribute of a block.
type Attribute struct {
	// Type is the value's type; cty.DynamicPseudoType where the package does not say
	// (cdktf's any, and attributes of object types).
	Type cty.Type `json:"type"`
	// Required arguments must be set; Computed (computed-only) ones cannot be: the provider
	// sets them.
	Required bool `json:"required,omitempty"`
	Computed bool `json:"computed,omitempty"`
	// Object is, for an attribute of an object type or of a list or set of objects, the
	// objects' attributes (such an attribute may also be written in block syntax).
	Object *Block `json:"object,omitempty"`
	// Derived: the manifest documents no Terraform name for it (a computed-only attribute); the
	// name is cdktf's converted to snake case, which may differ from the provider's where digits
	// or renames are involved (see Block.Attr).
	Derived bool `json:"derived,omitempty"`
}

// Nested is a nested block type.
type Nested struct {
	// Required blocks must appear at least once; MaxOne blocks at most once.
	Required bool `json:"required,omitempty"`
	MaxOne   bool `json:"max_one,omitempty"`
	Block
}

// Attr returns the attribute of that Terraform name, or nil. A Derived name is matched loosely
// (underscores and a trailing "_attribute" ignored): cdktf's addressLine1 is the provider's
// address_line_1, its selfAttribute is self.
func (b *Block) Attr(name string) *Attribute {
	if a := b.Attrs[name]; a != nil {
		return a
	}
	key := loose(name)
	for n, a := range b.Attrs {
		if a.Derived && (loose(n) == key || loose(strings.TrimSuffix(n, "_attribute")) == key) {
			return a
		}
	}
	return nil
}

func loose(name string) string { return strings.ReplaceAll(name, "_", "") }

// HasAttr reports whether a reference may read name from the block: an attribute or a block.
func (b *Block) HasAttr(name string) bool {
	return b.Attr(name) != nil || b.Blocks[name] != nil
}

// AttrNames returns, sorted, the names a reference may read from the block: its attributes
// and its blocks.
func (b *Block) AttrNames() []string {
	out := append(keys(b.Attrs), keys(b.Blocks)...)
	sort.Strings(out)
	return out
}

// Count returns how many attributes and blocks the schema has, and how many attribute names
// are Derived.
func (s *Schema) Count() (attrs, blocks, derived int) {
	var walk func(b *Block)
	walk = func(b *Block) {
		for _, a := range b.Attrs {
			attrs++
			if a.Derived {
				derived++
			}
			if a.Object != nil {
				walk(a.Object)
			}
		}
		for _, n := range b.Blocks {
			blocks++
			walk(&n.Block)
		}
	}
	walk(s.ProviderConfig)
	for _, b := range s.Resources {
		walk(b)
	}
	for _, b := range s.DataSources {
		walk(b)
	}
	return
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
	if f, err := os.Open(cache); err == nil {
		var s Schema
		err := json.NewDecoder(bufio.NewReaderSize(f, 1<<20)).Decode(&s)
		f.Close()
		if err == nil && s.Format == format && s.PackageVersion == pkg.Version {
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

// The parts of the .jsii manifest (the jsii assembly format) the extraction reads.
type (
	jsiiType struct {
		Kind     string   `json:"kind"` // class, interface, enum
		Datatype bool     `json:"datatype"`
		Base     string   `json:"base"`
		Docs     jsiiDocs `json:"docs"`
		// Initializer: a resource's constructor (scope, id, config).
		Initializer *struct {
			Parameters []struct {
				Name string  `json:"name"`
				Type jsiiRef `json:"type"`
			} `json:"parameters"`
		} `json:"initializer"`
		// Methods: a …List class's get(index) returns the element's …OutputReference.
		Methods []struct {
			Name    string `json:"name"`
			Returns *struct {
				Type jsiiRef `json:"type"`
			} `json:"returns"`
		} `json:"methods"`
		Properties []jsiiProp `json:"properties"`
	}
	jsiiDocs struct {
		Summary string `json:"summary"`
		Remarks string `json:"remarks"`
	}
	jsiiProp struct {
		Name      string   `json:"name"`
		Optional  bool     `json:"optional"`
		Immutable bool     `json:"immutable"` // a getter without a setter
		Static    bool     `json:"static"`
		Protected bool     `json:"protected"`
		Docs      jsiiDocs `json:"docs"`
		Type      jsiiRef  `json:"type"`
	}
	// jsiiRef is a type reference: a primitive (string, number, boolean, any, json), a named
	// type (fqn), a collection (array or map) of one, or a union of them.
	jsiiRef struct {
		Primitive  string `json:"primitive"`
		FQN        string `json:"fqn"`
		Collection *struct {
			Kind        string  `json:"kind"`
			ElementType jsiiRef `json:"elementtype"`
		} `json:"collection"`
		Union *struct {
			Types []jsiiRef `json:"types"`
		} `json:"union"`
	}
)

// readJSII streams the manifest's "types" object, the only part the extraction needs (the
// rest holds the package's readme and per-language targets).
func readJSII(path string) (map[string]*jsiiType, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dec := json.NewDecoder(bufio.NewReaderSize(f, 1<<20))
	bad := func(err error) error { return fmt.Errorf("providerschema: %s: %w", path, err) }
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, bad(fmt.Errorf("not a JSON object (%v)", err))
	}
	var types map[string]*jsiiType
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, bad(err)
		}
		if t != "types" {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, bad(err)
			}
			continue
		}
		if t, err := dec.Token(); err != nil || t != json.Delim('{') {
			return nil, bad(fmt.Errorf("types is not an object (%v)", err))
		}
		types = make(map[string]*jsiiType, 1<<15)
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return nil, bad(err)
			}
			var jt jsiiType
			if err := dec.Decode(&jt); err != nil {
				return nil, bad(fmt.Errorf("types[%v]: %w", k, err))
			}
			types[k.(string)] = &jt
		}
		if _, err := dec.Token(); err != nil {
			return nil, bad(err)
		}
	}
	if _, err := dec.Token(); err != nil && err != io.EOF {
		return nil, bad(err)
	}
	if types == nil {
		return nil, bad(errors.New("no types"))
	}
	return types, nil
}

var (
	// The registry link of a class: Represents a {@link …/docs/resources/lb aws_lb}.
	classLink = regexp.MustCompile(`\{@link https://registry\.terraform\.io/providers/\S+/docs(?:/(resources|data-sources)/\S+)? ([a-z0-9_]+)\}`)
	// The registry link of a struct property: {@link …/docs/resources/lb#subnet_id Lb#subnet_id}.
	propLink = regexp.MustCompile(`\{@link https://registry\.terraform\.io/providers/\S+#[a-z0-9_]+ \w+#([a-z0-9_]+)\}`)
)

// Extract reads the schema from the package installed in dir.
func Extract(dir string) (*Schema, error) {
	pkg, err := readPackageJSON(dir)
	if err != nil {
		return nil, err
	}
	types, err := readJSII(filepath.Join(dir, ".jsii"))
	if err != nil {
		return nil, err
	}
	s := &Schema{
		Format: format, Package: pkg.Name, PackageVersion: pkg.Version,
		Provider: pkg.Cdktf.Provider.Name, ProviderVersion: pkg.Cdktf.Provider.Version,
		Resources: map[string]*Block{}, DataSources: map[string]*Block{},
	}
	x := &extractor{types: types}
	for fqn, t := range types {
		if t.Kind != "class" {
			continue
		}
		var into map[string]*Block
		switch t.Base {
		case "cdktf.TerraformResource":
			into = s.Resources
		case "cdktf.TerraformDataSource":
			into = s.DataSources
		case "cdktf.TerraformProvider":
		default:
			continue
		}
		m := classLink.FindStringSubmatch(t.Docs.Summary)
		if m == nil {
			return nil, fmt.Errorf("providerschema: %s: class %s: no registry link naming its type in its documentation", dir, fqn)
		}
		config := ""
		if t.Initializer != nil {
			for _, p := range t.Initializer.Parameters {
				if p.Name == "config" {
					config = p.Type.FQN
				}
			}
		}
		if config == "" {
			return nil, fmt.Errorf("providerschema: %s: class %s: no config parameter", dir, fqn)
		}
		b, err := x.block(config, fqn)
		if err != nil {
			return nil, fmt.Errorf("providerschema: %s: %s: %w", dir, m[2], err)
		}
		if into == nil {
			// alias is a meta-argument of every provider block, not part of its schema.
			delete(b.Attrs, "alias")
			s.ProviderConfig = b
			continue
		}
		into[m[2]] = b
	}
	if s.ProviderConfig == nil || len(s.Resources) == 0 || len(s.DataSources) == 0 {
		return nil, fmt.Errorf("providerschema: %s: found %d resources, %d data sources and %v provider block: not the package layout this extractor reads", dir, len(s.Resources), len(s.DataSources), s.ProviderConfig != nil)
	}
	return s, nil
}

type extractor struct {
	types map[string]*jsiiType
}

// block builds a block's schema from its struct (the arguments and blocks) and its class (the
// resource, or the block's …OutputReference: the computed-only attributes). class may be "".
func (x *extractor) block(structFQN, classFQN string) (*Block, error) {
	st := x.types[structFQN]
	if st == nil || st.Kind != "interface" {
		return nil, fmt.Errorf("no struct %s in the manifest", structFQN)
	}
	b := &Block{}
	byProp := map[string]bool{}
	for _, p := range st.Properties {
		byProp[p.Name] = true
		m := propLink.FindStringSubmatch(p.Docs.Summary + " " + p.Docs.Remarks)
		if m == nil {
			return nil, fmt.Errorf("%s.%s: no registry link naming it in its documentation", structFQN, p.Name)
		}
		name := m[1]
		elem, many := structOf(p.Type)
		isBlock := strings.HasSuffix(p.Docs.Summary, " block.")
		switch {
		case isBlock && elem == "":
			// cdktf stops describing blocks nested too deep (type any).
			b.addBlock(name, &Nested{Required: !p.Optional, Block: Block{Opaque: true}})
		case isBlock:
			nb, err := x.block(elem, x.classOf(classFQN, p.Name))
			if err != nil {
				return nil, err
			}
			b.addBlock(name, &Nested{Required: !p.Optional, MaxOne: !many, Block: *nb})
		case elem != "":
			// An attribute of an object type (or a list or set of objects).
			ob, err := x.block(elem, x.classOf(classFQN, p.Name))
			if err != nil {
				return nil, err
			}
			b.addAttr(name, &Attribute{Type: cty.DynamicPseudoType, Required: !p.Optional, Object: ob})
		default:
			b.addAttr(name, &Attribute{Type: ctyType(p.Type), Required: !p.Optional})
		}
	}
	if err := x.computed(b, classFQN, byProp); err != nil {
		return nil, err
	}
	return b, nil
}

// computed adds a class's computed-only attributes to b: its read-only getters that are not
// the struct's properties (set through the struct) nor their …Input twins.
func (x *extractor) computed(b *Block, classFQN string, byProp map[string]bool) error {
	cl := x.types[classFQN]
	if cl == nil {
		return nil
	}
	for _, p := range cl.Properties {
		switch {
		case p.Static, p.Protected, !p.Immutable, byProp[p.Name], p.Name == "internalValue":
			continue
		case strings.HasSuffix(p.Name, "Input") && byProp[strings.TrimSuffix(p.Name, "Input")]:
			continue
		}
		a := &Attribute{Type: ctyType(p.Type), Computed: true, Derived: true}
		if c := x.types[p.Type.FQN]; c != nil && strings.HasPrefix(p.Type.FQN, "@cdktf/") {
			// A computed object or list of objects: its attributes are its class's getters.
			ref := p.Type.FQN
			if e := listElem(c); e != "" {
				ref = e
			}
			ob := &Block{}
			if err := x.computed(ob, ref, map[string]bool{}); err != nil {
				return err
			}
			a.Type, a.Object = cty.DynamicPseudoType, ob
		}
		b.addAttr(snake(p.Name), a)
	}
	return nil
}

// classOf returns the class of a block or object property of a class: the …OutputReference
// its getter returns, or that of the elements of the …List it returns ("" if none).
func (x *extractor) classOf(classFQN, prop string) string {
	cl := x.types[classFQN]
	if cl == nil {
		return ""
	}
	for _, p := range cl.Properties {
		if p.Name != prop || p.Static {
			continue
		}
		c := x.types[p.Type.FQN]
		if c == nil {
			return ""
		}
		if e := listElem(c); e != "" {
			return e
		}
		return p.Type.FQN
	}
	return ""
}

// listElem returns the element class of a …List or …Map class: what its get(index) returns.
func listElem(c *jsiiType) string {
	for _, m := range c.Methods {
		if m.Name == "get" && m.Returns != nil {
			return m.Returns.Type.FQN
		}
	}
	return ""
}

func (b *Block) addAttr(name string, a *Attribute) {
	if b.Attrs == nil {
		b.Attrs = map[string]*Attribute{}
	}
	b.Attrs[name] = a
}

func (b *Block) addBlock(name string, n *Nested) {
	if b.Blocks == nil {
		b.Blocks = map[string]*Nested{}
	}
	b.Blocks[name] = n
}

// unwrap drops cdktf.IResolvable from a union (cdktf lets any value be a token).
func unwrap(r jsiiRef) jsiiRef {
	if r.Union == nil {
		return r
	}
	var rest []jsiiRef
	for _, t := range r.Union.Types {
		if t.FQN != "cdktf.IResolvable" {
			rest = append(rest, t)
		}
	}
	if len(rest) == 1 {
		return unwrap(rest[0])
	}
	return jsiiRef{Primitive: "any"}
}

// structOf returns the struct a property's type is made of (a struct or an array of structs),
// and whether it is an array; "" if it is not made of one.
func structOf(r jsiiRef) (fqn string, many bool) {
	r = unwrap(r)
	if r.Collection != nil && r.Collection.Kind == "array" {
		e := unwrap(r.Collection.ElementType)
		if strings.HasPrefix(e.FQN, "@cdktf/") {
			return e.FQN, true
		}
		return "", false
	}
	if strings.HasPrefix(r.FQN, "@cdktf/") {
		return r.FQN, false
	}
	return "", false
}

// ctyType is the Terraform type of a jsii type reference, cty.DynamicPseudoType where it does
// not say (any, json, a struct, a token).
func ctyType(r jsiiRef) cty.Type {
	r = unwrap(r)
	switch {
	case r.Primitive == "string":
		return cty.String
	case r.Primitive == "number":
		return cty.Number
	case r.Primitive == "boolean":
		return cty.Bool
	case r.Collection != nil:
		e := ctyType(r.Collection.ElementType)
		if e == cty.DynamicPseudoType {
			return e
		}
		if r.Collection.Kind == "map" {
			return cty.Map(e)
		}
		return cty.List(e)
	}
	// cdktf's typed maps and lists of computed attributes (cdktf.StringMap, cdktf.NumberList…).
	switch r.FQN {
	case "cdktf.StringMap":
		return cty.Map(cty.String)
	case "cdktf.NumberMap":
		return cty.Map(cty.Number)
	case "cdktf.BooleanMap":
		return cty.Map(cty.Bool)
	case "cdktf.StringListList":
		return cty.List(cty.List(cty.String))
	case "cdktf.NumberListList":
		return cty.List(cty.List(cty.Number))
	}
	return cty.DynamicPseudoType
}

// snake converts cdktf's camel case name to Terraform's snake case (dnsName: dns_name).
func snake(name string) string {
	var sb strings.Builder
	for i, r := range name {
		if unicode.IsUpper(r) {
			if i > 0 {
				sb.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		sb.WriteRune(r)
	}
	return sb.String()
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

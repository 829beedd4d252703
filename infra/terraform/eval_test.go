package terraform

import (
	"encoding/base64"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"

	"github.com/idgen/idgen/infra/providerschema"
)

// A small evaluator of module instances from literal inputs, without a provider: variables
// (types, defaults, validations), locals, module calls (with count) and outputs are evaluated as
// Terraform would at plan time; every attribute of a resource or data source is a placeholder
// string naming it ("module.fleet.data.aws_ec2_managed_prefix_list.gateway[\"s3\"].id"), so what depends only
// on inputs is known and what comes from AWS is told apart by where it comes from. What it
// cannot evaluate becomes unknown, and is reported with why.

// instance is one evaluated module instance.
type instance struct {
	dir, addr string
	cfg       config
	schema    *providerschema.Schema
	vars      map[string]cty.Value
	locals    map[string]cty.Value
	modules   map[string]cty.Value
	objects   map[string]cty.Value // resource and data placeholders: "aws_x.name", "data.aws_x.name"
	outputs   map[string]cty.Value
	children  []*instance
	// problems are what could not be evaluated, or failed a validation.
	problems []string
	// given are what AWS answers, by absolute address of a resource or data source
	// ("module.transit.data.aws_vpc.this"): each is given the placeholder and returns the value
	// that takes its place (a test's stand-in for a data source's result). Module calls pass
	// them on.
	given map[string]func(placeholder cty.Value) cty.Value
}

// readConfig parses a directory's .tf files.
func readConfig(dir string) (config, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.tf"))
	if err != nil || len(paths) == 0 {
		return nil, fmt.Errorf("%s: no .tf files (%v)", dir, err)
	}
	var c config
	p := hclparse.NewParser()
	for _, path := range paths {
		src, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		f, diags := p.ParseHCL(src, path)
		if diags.HasErrors() {
			return nil, diags
		}
		c = append(c, tfFile{name: path, src: src, body: f.Body.(*hclsyntax.Body)})
	}
	return c, nil
}

// readTfvars reads a .tfvars file of literal values.
func readTfvars(path string) (map[string]cty.Value, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, diags := hclparse.NewParser().ParseHCL(src, path)
	if diags.HasErrors() {
		return nil, diags
	}
	attrs, diags := f.Body.JustAttributes()
	if diags.HasErrors() {
		return nil, diags
	}
	out := map[string]cty.Value{}
	for name, a := range attrs {
		v, diags := a.Expr.Value(nil)
		if diags.HasErrors() {
			return nil, fmt.Errorf("%s: %s is not a literal: %s", path, name, diags.Error())
		}
		out[name] = v
	}
	return out, nil
}

// evalModule evaluates the module in dir, called as addr with these inputs.
func evalModule(dir, addr string, inputs map[string]cty.Value, schema *providerschema.Schema) (*instance, error) {
	return evalModuleGiven(dir, addr, inputs, schema, nil)
}

// evalModuleGiven is evalModule with the given results of resources and data sources in place of
// their placeholders.
func evalModuleGiven(dir, addr string, inputs map[string]cty.Value, schema *providerschema.Schema, given map[string]func(cty.Value) cty.Value) (*instance, error) {
	cfg, err := readConfig(dir)
	if err != nil {
		return nil, err
	}
	in := &instance{dir: filepath.Clean(dir), addr: addr, cfg: cfg, schema: schema,
		vars: map[string]cty.Value{}, locals: map[string]cty.Value{}, modules: map[string]cty.Value{},
		objects: map[string]cty.Value{}, outputs: map[string]cty.Value{}, given: given}
	if err := in.evalVariables(inputs); err != nil {
		return nil, err
	}
	if len(in.problems) > 0 {
		return in, nil // a variable failed its validation: plan stops there
	}
	in.evalGraph()
	for _, b := range cfg.blocks("output", "") {
		v := cty.DynamicVal
		if a := b.Body.Attributes["value"]; a != nil {
			v = in.value(a.Expr, nil, "output "+b.Labels[0])
		}
		in.outputs[b.Labels[0]] = v
	}
	return in, nil
}

func (in *instance) problem(format string, args ...any) {
	in.problems = append(in.problems, in.addr+": "+fmt.Sprintf(format, args...))
}

func (in *instance) evalVariables(inputs map[string]cty.Value) error {
	declared := map[string]bool{}
	for _, b := range in.cfg.blocks("variable", "") {
		name := b.Labels[0]
		declared[name] = true
		ty, defaults := cty.DynamicPseudoType, (*typeexpr.Defaults)(nil)
		if a := b.Body.Attributes["type"]; a != nil {
			var diags hcl.Diagnostics
			if ty, defaults, diags = typeexpr.TypeConstraintWithDefaults(a.Expr); diags.HasErrors() {
				return fmt.Errorf("%s: variable %s: %s", in.addr, name, diags.Error())
			}
		}
		v, given := inputs[name]
		if !given {
			a := b.Body.Attributes["default"]
			if a == nil {
				return fmt.Errorf("%s: required variable %s is not given", in.addr, name)
			}
			var diags hcl.Diagnostics
			if v, diags = a.Expr.Value(nil); diags.HasErrors() {
				return fmt.Errorf("%s: variable %s: %s", in.addr, name, diags.Error())
			}
		}
		if defaults != nil && v.IsKnown() && !v.IsNull() {
			v = defaults.Apply(v)
		}
		cv, err := convert.Convert(v, ty)
		if err != nil {
			return fmt.Errorf("%s: variable %s: %v", in.addr, name, err)
		}
		in.vars[name] = cv
	}
	for _, name := range sortedKeys(inputs) {
		if !declared[name] {
			return fmt.Errorf("%s: %s is given, but not a variable of %s", in.addr, name, in.dir)
		}
	}
	// Validations, as plan runs them.
	for _, b := range in.cfg.blocks("variable", "") {
		for _, vb := range b.Body.Blocks {
			if vb.Type != "validation" {
				continue
			}
			cond := in.value(vb.Body.Attributes["condition"].Expr, nil, "validation of var."+b.Labels[0])
			if cond.IsKnown() && !cond.IsNull() && cond.Type() == cty.Bool && cond.False() {
				msg := ""
				if a := vb.Body.Attributes["error_message"]; a != nil {
					if m := in.value(a.Expr, nil, ""); m.IsKnown() && m.Type() == cty.String {
						msg = m.AsString()
					}
				}
				in.problem("variable %s: %s", b.Labels[0], msg)
			}
		}
	}
	return nil
}

// node is one thing the graph evaluates: a local, a module call, or a resource's or data
// source's placeholder (which needs its count or for_each).
type node struct {
	key  string // local.x, module.x, aws_x.y, data.aws_x.y
	deps []string
	eval func()
}

func (in *instance) evalGraph() {
	var nodes []*node
	add := func(key string, exprs []hcl.Expression, eval func()) {
		n := &node{key: key, eval: eval}
		for _, e := range exprs {
			if e != nil {
				n.deps = append(n.deps, in.refs(e)...)
			}
		}
		nodes = append(nodes, n)
	}
	for _, l := range in.cfg.blocks("locals", "") {
		for name, a := range l.Body.Attributes {
			add("local."+name, []hcl.Expression{a.Expr}, func() { in.locals[name] = in.value(a.Expr, nil, "local."+name) })
		}
	}
	for _, b := range in.cfg.blocks("module", "") {
		var exprs []hcl.Expression
		for name, a := range b.Body.Attributes {
			if name != "providers" && name != "depends_on" {
				exprs = append(exprs, a.Expr)
			}
		}
		add("module."+b.Labels[0], exprs, func() { in.evalCall(b) })
	}
	for _, kind := range []string{"resource", "data"} {
		for _, b := range in.cfg.blocks(kind, "") {
			key := b.Labels[0] + "." + b.Labels[1]
			if kind == "data" {
				key = "data." + key
			}
			var exprs []hcl.Expression
			for _, m := range []string{"count", "for_each"} {
				if a := b.Body.Attributes[m]; a != nil {
					exprs = append(exprs, a.Expr)
				}
			}
			add(key, exprs, func() {
				in.objects[key] = in.placeholder(key, b)
				if f := in.given[in.addr+"."+key]; f != nil {
					in.objects[key] = f(in.objects[key])
				}
			})
		}
	}
	known := map[string]bool{}
	for _, n := range nodes {
		known[n.key] = true
	}
	done := map[string]bool{}
	for progress := true; progress; {
		progress = false
		for _, n := range nodes {
			if done[n.key] {
				continue
			}
			ready := true
			for _, d := range n.deps {
				if known[d] && !done[d] && d != n.key {
					ready = false
				}
			}
			if ready {
				n.eval()
				done[n.key] = true
				progress = true
			}
		}
	}
	for _, n := range nodes {
		if !done[n.key] {
			in.problem("%s: a dependency cycle", n.key)
		}
	}
}

// refs returns what an expression refers to, as graph keys.
func (in *instance) refs(e hcl.Expression) []string {
	var out []string
	for _, tr := range e.Variables() {
		s := steps(tr)
		switch {
		case len(s) >= 2 && (s[0] == "local" || s[0] == "module"):
			out = append(out, s[0]+"."+s[1])
		case len(s) >= 3 && s[0] == "data":
			out = append(out, "data."+s[1]+"."+s[2])
		case len(s) >= 2:
			out = append(out, s[0]+"."+s[1])
		}
	}
	return out
}

// placeholder is the value of a resource or data source: an object whose every attribute (from
// the provider's schema) is a string naming it; a tuple of them with count, a map with for_each.
func (in *instance) placeholder(key string, b *hclsyntax.Block) cty.Value {
	types := in.schema.Resources
	if b.Type == "data" {
		types = in.schema.DataSources
	}
	obj := func(addr string) cty.Value {
		attrs := map[string]cty.Value{}
		if sch := types[b.Labels[0]]; sch != nil {
			for _, a := range sch.AttrNames() {
				attrs[a] = cty.StringVal(addr + "." + a)
				if fields := nestedAttrs[b.Labels[0]][a]; fields != nil {
					elem := map[string]cty.Value{}
					for _, f := range fields {
						elem[f] = cty.StringVal(fmt.Sprintf("%s.%s[0].%s", addr, a, f))
					}
					attrs[a] = cty.TupleVal([]cty.Value{cty.ObjectVal(elem)})
				}
			}
		}
		if b.Type == "data" {
			for attr, v := range in.standIn(b) {
				attrs[attr] = v
			}
		}
		return cty.ObjectVal(attrs)
	}
	if a := b.Body.Attributes["count"]; a != nil {
		n := in.value(a.Expr, nil, key+".count")
		if !n.IsKnown() || n.IsNull() || n.Type() != cty.Number {
			return cty.DynamicVal
		}
		c, _ := n.AsBigFloat().Int64()
		var elems []cty.Value
		for i := range c {
			elems = append(elems, obj(fmt.Sprintf("%s.%s[%d]", in.addr, key, i)))
		}
		if len(elems) == 0 {
			return cty.EmptyTupleVal
		}
		return cty.TupleVal(elems)
	}
	if a := b.Body.Attributes["for_each"]; a != nil {
		fe := in.value(a.Expr, nil, key+".for_each")
		if !fe.IsWhollyKnown() || fe.IsNull() || !fe.CanIterateElements() {
			return cty.DynamicVal
		}
		m := map[string]cty.Value{}
		for it := fe.ElementIterator(); it.Next(); {
			k, v := it.Element()
			if fe.Type().IsSetType() {
				k = v
			}
			if k.Type() != cty.String {
				return cty.DynamicVal
			}
			m[k.AsString()] = obj(fmt.Sprintf("%s.%s[%q]", in.addr, key, k.AsString()))
		}
		return cty.ObjectVal(m)
	}
	return obj(in.addr + "." + key)
}

// nestedAttrs are the computed attributes, by resource or data source type, that are lists of
// objects the configuration reads fields of (the schema names attributes, not their types): their
// placeholder is a list of one object whose every field is a string naming it.
var nestedAttrs = map[string]map[string][]string{
	"aws_vpc_endpoint": {"dns_entry": {"dns_name", "hosted_zone_id"}},
}

// Stand-ins for what AWS answers to a few data sources at plan time, so that what the plan
// computes from them (the vCPU quota check) is evaluated too: each instance type's vCPUs, the
// region's EC2 quota of running On-Demand Standard instances (a test of the quota check sets it),
// and the pinned image's architecture.
var (
	instanceVCPUs = map[string]int64{"c7g.large": 2, "c7g.xlarge": 4, "c7g.2xlarge": 8, "t4g.small": 2, "t4g.medium": 2, "m7g.large": 2}
	standInQuota  = int64(1024)
	standInArch   = "arm64"
)

// standIn returns the stand-in attributes of a data source block.
func (in *instance) standIn(b *hclsyntax.Block) map[string]cty.Value {
	switch b.Labels[0] {
	case "aws_ec2_instance_type":
		a := b.Body.Attributes["instance_type"]
		if a == nil {
			return nil
		}
		v := in.value(a.Expr, nil, "")
		if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
			return nil
		}
		if n, ok := instanceVCPUs[v.AsString()]; ok {
			return map[string]cty.Value{"default_vcpus": cty.NumberIntVal(n), "supported_architectures": cty.ListVal([]cty.Value{cty.StringVal("arm64")})}
		}
	case "aws_servicequotas_service_quota":
		return map[string]cty.Value{"value": cty.NumberIntVal(standInQuota)}
	case "aws_ami":
		return map[string]cty.Value{"architecture": cty.StringVal(standInArch)}
	}
	return nil
}

// evalCall evaluates a module call: its arguments, then the called module for each instance.
func (in *instance) evalCall(b *hclsyntax.Block) {
	name := b.Labels[0]
	src := literalString(b, "source")
	if !strings.HasPrefix(src, "./") && !strings.HasPrefix(src, "../") {
		in.modules[name] = cty.DynamicVal
		in.problem("module %s: source %q is not a local path", name, src)
		return
	}
	one := func(extra map[string]cty.Value, addr string) cty.Value {
		inputs := map[string]cty.Value{}
		for arg, a := range b.Body.Attributes {
			if !metaArguments[arg] {
				inputs[arg] = in.value(a.Expr, extra, fmt.Sprintf("module %s argument %s", name, arg))
			}
		}
		child, err := evalModuleGiven(filepath.Join(in.dir, src), addr, inputs, in.schema, in.given)
		if err != nil {
			in.problem("module %s: %v", name, err)
			return cty.DynamicVal
		}
		in.children = append(in.children, child)
		return cty.ObjectVal(child.outputs)
	}
	a := b.Body.Attributes["count"]
	if a == nil {
		in.modules[name] = one(nil, in.addr+".module."+name)
		return
	}
	n := in.value(a.Expr, nil, "module "+name+" count")
	if !n.IsKnown() || n.IsNull() || n.Type() != cty.Number {
		in.problem("module %s: count is not known at plan time", name)
		in.modules[name] = cty.DynamicVal
		return
	}
	c, _ := n.AsBigFloat().Int64()
	var elems []cty.Value
	for i := range c {
		elems = append(elems, one(map[string]cty.Value{"count": cty.ObjectVal(map[string]cty.Value{"index": cty.NumberIntVal(i)})},
			fmt.Sprintf("%s.module.%s[%d]", in.addr, name, i)))
	}
	if len(elems) == 0 {
		in.modules[name] = cty.EmptyTupleVal
		return
	}
	in.modules[name] = cty.TupleVal(elems)
}

// ctx is the evaluation context of the instance, with extra variables (count, each).
func (in *instance) ctx(extra map[string]cty.Value) *hcl.EvalContext {
	vars := map[string]cty.Value{
		"var":    objectOf(in.vars),
		"local":  objectOf(in.locals),
		"module": objectOf(in.modules),
		"path": cty.ObjectVal(map[string]cty.Value{
			"module": cty.StringVal(in.dir), "root": cty.StringVal("."), "cwd": cty.StringVal("."),
		}),
		"terraform": cty.ObjectVal(map[string]cty.Value{"workspace": cty.StringVal("default")}),
	}
	data := map[string]map[string]cty.Value{}
	res := map[string]map[string]cty.Value{}
	for key, v := range in.objects {
		parts := strings.Split(key, ".")
		if parts[0] == "data" {
			if data[parts[1]] == nil {
				data[parts[1]] = map[string]cty.Value{}
			}
			data[parts[1]][parts[2]] = v
		} else {
			if res[parts[0]] == nil {
				res[parts[0]] = map[string]cty.Value{}
			}
			res[parts[0]][parts[1]] = v
		}
	}
	dv := map[string]cty.Value{}
	for typ, m := range data {
		dv[typ] = cty.ObjectVal(m)
	}
	vars["data"] = objectOf(dv)
	for typ, m := range res {
		vars[typ] = cty.ObjectVal(m)
	}
	for k, v := range extra {
		vars[k] = v
	}
	return &hcl.EvalContext{Variables: vars, Functions: in.functions()}
}

func objectOf(m map[string]cty.Value) cty.Value {
	if len(m) == 0 {
		return cty.EmptyObjectVal
	}
	return cty.ObjectVal(m)
}

// value evaluates an expression; what fails is unknown, and a problem when what is not "".
func (in *instance) value(e hcl.Expression, extra map[string]cty.Value, what string) cty.Value {
	v, diags := e.Value(in.ctx(extra))
	if diags.HasErrors() {
		if what != "" {
			in.problem("%s: %s", what, diags.Error())
		}
		return cty.DynamicVal
	}
	return v
}

// functions are the Terraform functions the configuration uses.
func (in *instance) functions() map[string]function.Function {
	str1 := func(f func(string) cty.Value) function.Function {
		return function.New(&function.Spec{
			Params: []function.Parameter{{Name: "s", Type: cty.String}},
			Type:   function.StaticReturnType(cty.String),
			Impl:   func(args []cty.Value, _ cty.Type) (cty.Value, error) { return f(args[0].AsString()), nil },
		})
	}
	str2bool := func(f func(a, b string) bool) function.Function {
		return function.New(&function.Spec{
			Params: []function.Parameter{{Name: "s", Type: cty.String}, {Name: "t", Type: cty.String}},
			Type:   function.StaticReturnType(cty.Bool),
			Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
				return cty.BoolVal(f(args[0].AsString(), args[1].AsString())), nil
			},
		})
	}
	all := func(want bool) function.Function {
		return function.New(&function.Spec{
			Params: []function.Parameter{{Name: "list", Type: cty.List(cty.Bool)}},
			Type:   function.StaticReturnType(cty.Bool),
			Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
				// As Terraform's: unknown when an element is unknown (HCL checks a for
				// expression's if clause with unknown values first).
				if !args[0].IsWhollyKnown() {
					return cty.UnknownVal(cty.Bool), nil
				}
				for it := args[0].ElementIterator(); it.Next(); {
					_, v := it.Element()
					if v.IsNull() || v.True() != want {
						return cty.BoolVal(!want), nil
					}
				}
				return cty.BoolVal(want), nil
			},
		})
	}
	return map[string]function.Function{
		"alltrue":      all(true),
		"anytrue":      all(false),
		"base64encode": str1(func(s string) cty.Value { return cty.StringVal(base64.StdEncoding.EncodeToString([]byte(s))) }),
		"can":          tryfunc.CanFunc,
		"ceil":         stdlib.CeilFunc,
		"cidrnetmask":  cidrNetmaskFunc,
		"cidrsubnet":   cidrSubnetFunc,
		"coalesce":     stdlib.CoalesceFunc,
		"concat":       stdlib.ConcatFunc,
		"contains":     stdlib.ContainsFunc,
		"distinct":     stdlib.DistinctFunc,
		"endswith":     str2bool(strings.HasSuffix),
		"file":         in.fileFunc(),
		"flatten":      stdlib.FlattenFunc,
		"floor":        stdlib.FloorFunc,
		"format":       stdlib.FormatFunc,
		"join":         stdlib.JoinFunc,
		"jsondecode":   stdlib.JSONDecodeFunc,
		"jsonencode":   stdlib.JSONEncodeFunc,
		"keys":         stdlib.KeysFunc,
		"length":       stdlib.LengthFunc,
		"lookup":       stdlib.LookupFunc,
		"lower":        stdlib.LowerFunc,
		"max":          stdlib.MaxFunc,
		"merge":        stdlib.MergeFunc,
		"min":          stdlib.MinFunc,
		"nonsensitive": function.New(&function.Spec{Params: []function.Parameter{{Name: "v", Type: cty.DynamicPseudoType, AllowUnknown: true}}, Type: func(args []cty.Value) (cty.Type, error) { return args[0].Type(), nil }, Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) { return args[0], nil }}),
		"one":          oneFunc,
		"regex":        stdlib.RegexFunc,
		"replace":      stdlib.ReplaceFunc,
		"setsubtract":  stdlib.SetSubtractFunc,
		"sort":         stdlib.SortFunc,
		"split":        stdlib.SplitFunc,
		"startswith":   str2bool(strings.HasPrefix),
		"strcontains":  str2bool(strings.Contains),
		"templatefile": in.templateFileFunc(),
		"tolist":       stdlib.MakeToFunc(cty.List(cty.DynamicPseudoType)),
		"tomap":        stdlib.MakeToFunc(cty.Map(cty.DynamicPseudoType)),
		"tonumber":     stdlib.MakeToFunc(cty.Number),
		"toset":        stdlib.MakeToFunc(cty.Set(cty.DynamicPseudoType)),
		"tostring":     stdlib.MakeToFunc(cty.String),
		"trimprefix":   stdlib.TrimPrefixFunc,
		"trimsuffix":   stdlib.TrimSuffixFunc,
		"try":          tryfunc.TryFunc,
		"upper":        stdlib.UpperFunc,
		"values":       stdlib.ValuesFunc,
	}
}

func (in *instance) fileFunc() function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			b, err := os.ReadFile(args[0].AsString())
			if err != nil {
				return cty.NilVal, err
			}
			return cty.StringVal(string(b)), nil
		},
	})
}

// templateFileFunc renders a template file with its variables, as Terraform's templatefile.
func (in *instance) templateFileFunc() function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}, {Name: "vars", Type: cty.DynamicPseudoType}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			path := args[0].AsString()
			src, err := os.ReadFile(path)
			if err != nil {
				return cty.NilVal, err
			}
			expr, diags := hclsyntax.ParseTemplate(src, path, hcl.InitialPos)
			if diags.HasErrors() {
				return cty.NilVal, diags
			}
			vars := map[string]cty.Value{}
			for it := args[1].ElementIterator(); it.Next(); {
				k, v := it.Element()
				vars[k.AsString()] = v
			}
			v, diags := expr.Value(&hcl.EvalContext{Variables: vars, Functions: in.functions()})
			if diags.HasErrors() {
				return cty.NilVal, diags
			}
			return convert.Convert(v, cty.String)
		},
	})
}

var oneFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "list", Type: cty.DynamicPseudoType}},
	Type: func(args []cty.Value) (cty.Type, error) {
		t := args[0].Type()
		switch {
		case t.IsListType() || t.IsSetType():
			return t.ElementType(), nil
		case t.IsTupleType() && len(t.TupleElementTypes()) == 1:
			return t.TupleElementTypes()[0], nil
		case t.IsTupleType():
			return cty.DynamicPseudoType, nil
		}
		return cty.NilType, fmt.Errorf("one: not a list")
	},
	Impl: func(args []cty.Value, ret cty.Type) (cty.Value, error) {
		switch n := args[0].LengthInt(); n {
		case 0:
			return cty.NullVal(ret), nil
		case 1:
			it := args[0].ElementIterator()
			it.Next()
			_, v := it.Element()
			return v, nil
		default:
			return cty.NilVal, fmt.Errorf("one: %d elements", n)
		}
	},
})

// cidrSubnetFunc is Terraform's cidrsubnet, for IPv4.
var cidrSubnetFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "prefix", Type: cty.String}, {Name: "newbits", Type: cty.Number}, {Name: "netnum", Type: cty.Number}},
	Type:   function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		p, err := netip.ParsePrefix(args[0].AsString())
		if err != nil || !p.Addr().Is4() {
			return cty.NilVal, fmt.Errorf("cidrsubnet: %q is not an IPv4 CIDR", args[0].AsString())
		}
		newbits, _ := args[1].AsBigFloat().Int64()
		netnum, _ := args[2].AsBigFloat().Int64()
		bits := p.Bits() + int(newbits)
		if bits > 32 || netnum < 0 || netnum >= 1<<newbits {
			return cty.NilVal, fmt.Errorf("cidrsubnet: %d new bits and network %d do not fit %s", newbits, netnum, p)
		}
		a := p.Masked().Addr().As4()
		base := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
		if bits > 0 {
			base |= uint32(netnum) << (32 - bits)
		}
		addr := netip.AddrFrom4([4]byte{byte(base >> 24), byte(base >> 16), byte(base >> 8), byte(base)})
		return cty.StringVal(netip.PrefixFrom(addr, bits).String()), nil
	},
})

// cidrNetmaskFunc is Terraform's cidrnetmask (IPv4 only, as Terraform's).
var cidrNetmaskFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "prefix", Type: cty.String}},
	Type:   function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		p, err := netip.ParsePrefix(args[0].AsString())
		if err != nil || !p.Addr().Is4() {
			return cty.NilVal, fmt.Errorf("cidrnetmask: %q is not an IPv4 CIDR", args[0].AsString())
		}
		m := ^uint32(0) << (32 - p.Bits())
		if p.Bits() == 0 {
			m = 0
		}
		return cty.StringVal(netip.AddrFrom4([4]byte{byte(m >> 24), byte(m >> 16), byte(m >> 8), byte(m)}).String()), nil
	},
})

// walk calls f on the instance and every instance below it.
func (in *instance) walk(f func(*instance)) {
	f(in)
	sort.SliceStable(in.children, func(i, j int) bool { return in.children[i].addr < in.children[j].addr })
	for _, c := range in.children {
		c.walk(f)
	}
}

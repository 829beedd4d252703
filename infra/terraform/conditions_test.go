package terraform

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/gocty"
)

// The custom conditions of resources and data sources (lifecycle precondition and postcondition
// blocks), evaluated as a plan evaluates them: per instance (count.index, each.key and
// each.value), a postcondition with self the object, which a test gives as AWS would answer
// (evalModuleGiven) in place of its placeholder.

// objInstance is one instance of a resource or data source of an evaluated module instance.
type objInstance struct {
	addr  string
	block *hclsyntax.Block
	extra map[string]cty.Value // count, each
	self  cty.Value
}

// objInstances returns the instances of the resources (kind "resource") or data sources (kind
// "data") of type typ ("" for every type) and name ("" for every name) in in, and what could not
// be expanded.
func objInstances(in *instance, kind, typ, name string) ([]objInstance, []string) {
	var out []objInstance
	var problems []string
	for _, b := range in.cfg.blocks(kind, typ) {
		if name != "" && b.Labels[1] != name {
			continue
		}
		key := b.Labels[0] + "." + b.Labels[1]
		if kind == "data" {
			key = "data." + key
		}
		addr := in.addr + "." + key
		obj := in.objects[key]
		switch {
		case b.Body.Attributes["for_each"] != nil:
			fe := in.value(b.Body.Attributes["for_each"].Expr, nil, "")
			if !fe.IsWhollyKnown() || fe.IsNull() || !fe.CanIterateElements() {
				problems = append(problems, addr+": for_each is not known at plan time")
				continue
			}
			for it := fe.ElementIterator(); it.Next(); {
				k, v := it.Element()
				if fe.Type().IsSetType() {
					k = v
				}
				self := cty.DynamicVal
				if obj.IsKnown() && !obj.IsNull() && obj.Type().IsObjectType() && obj.Type().HasAttribute(k.AsString()) {
					self = obj.GetAttr(k.AsString())
				}
				out = append(out, objInstance{fmt.Sprintf("%s[%q]", addr, k.AsString()), b,
					map[string]cty.Value{"each": cty.ObjectVal(map[string]cty.Value{"key": k, "value": v})}, self})
			}
		case b.Body.Attributes["count"] != nil:
			n := in.value(b.Body.Attributes["count"].Expr, nil, "")
			var c int64
			if !n.IsKnown() || n.IsNull() || gocty.FromCtyValue(n, &c) != nil {
				problems = append(problems, addr+": count is not known at plan time")
				continue
			}
			for i := range c {
				self := cty.DynamicVal
				if obj.IsKnown() && !obj.IsNull() && obj.CanIterateElements() && int64(obj.LengthInt()) > i {
					self = obj.Index(cty.NumberIntVal(i))
				}
				out = append(out, objInstance{fmt.Sprintf("%s[%d]", addr, i), b,
					map[string]cty.Value{"count": cty.ObjectVal(map[string]cty.Value{"index": cty.NumberIntVal(i)})}, self})
			}
		default:
			out = append(out, objInstance{addr, b, nil, obj})
		}
	}
	return out, problems
}

// attr evaluates an argument of the instance (each and count in scope); unknown when it is not
// there or cannot be evaluated.
func (o objInstance) attr(in *instance, name string) cty.Value {
	a := o.block.Body.Attributes[name]
	if a == nil {
		return cty.DynamicVal
	}
	return in.value(a.Expr, o.extra, "")
}

// condition is one evaluated custom condition.
type condition struct {
	addr, kind string // the instance's address; precondition or postcondition
	known, ok  bool   // known: its condition evaluated to a bool (else a real plan would defer it)
	message    string // its error_message, evaluated
	why        string // why it could not be evaluated
}

func (c condition) String() string {
	switch {
	case !c.known:
		return fmt.Sprintf("%s: %s not known: %s", c.addr, c.kind, c.why)
	case c.ok:
		return fmt.Sprintf("%s: %s holds", c.addr, c.kind)
	}
	return fmt.Sprintf("%s: %s fails: %s", c.addr, c.kind, c.message)
}

// conditionsOf evaluates every precondition and postcondition of the instances of objInstances.
func conditionsOf(in *instance, kind, typ, name string) ([]condition, []string) {
	insts, problems := objInstances(in, kind, typ, name)
	var out []condition
	for _, o := range insts {
		for _, lc := range o.block.Body.Blocks {
			if lc.Type != "lifecycle" {
				continue
			}
			for _, cb := range lc.Body.Blocks {
				if cb.Type != "precondition" && cb.Type != "postcondition" {
					continue
				}
				extra := map[string]cty.Value{}
				for k, v := range o.extra {
					extra[k] = v
				}
				if cb.Type == "postcondition" {
					extra["self"] = o.self
				}
				c := condition{addr: o.addr, kind: cb.Type}
				v, diags := cb.Body.Attributes["condition"].Expr.Value(in.ctx(extra))
				switch {
				case diags.HasErrors():
					c.why = diags.Error()
				case !v.IsKnown() || v.IsNull() || v.Type() != cty.Bool:
					c.why = fmt.Sprintf("the condition is %#v", v)
				default:
					c.known, c.ok = true, v.True()
				}
				if c.known && !c.ok {
					m, diags := cb.Body.Attributes["error_message"].Expr.Value(in.ctx(extra))
					if diags.HasErrors() || !m.IsKnown() || m.Type() != cty.String {
						c.message = "(the error message cannot be evaluated: " + diags.Error() + ")"
					} else {
						c.message = m.AsString()
					}
				}
				out = append(out, c)
			}
		}
	}
	return out, problems
}

// failed returns the messages of the conditions that fail, and as problems those not known.
func failed(conds []condition) (messages, unknown []string) {
	for _, c := range conds {
		switch {
		case !c.known:
			unknown = append(unknown, c.String())
		case !c.ok:
			messages = append(messages, c.message)
		}
	}
	sort.Strings(messages)
	return messages, unknown
}

// withAttrs gives an object the attributes of attrs in place of its placeholder's.
func withAttrs(attrs map[string]cty.Value) func(cty.Value) cty.Value {
	return func(ph cty.Value) cty.Value {
		m := map[string]cty.Value{}
		if ph.IsKnown() && !ph.IsNull() && ph.Type().IsObjectType() {
			m = ph.AsValueMap()
		}
		for k, v := range attrs {
			m[k] = v
		}
		return cty.ObjectVal(m)
	}
}

// withEachAttrs gives each instance of a for_each object (by key) the attributes of its entry.
func withEachAttrs(attrs map[string]map[string]cty.Value) func(cty.Value) cty.Value {
	return func(ph cty.Value) cty.Value {
		if !ph.IsKnown() || ph.IsNull() || !ph.Type().IsObjectType() {
			return ph
		}
		m := ph.AsValueMap()
		for k, a := range attrs {
			if _, ok := m[k]; ok {
				m[k] = withAttrs(a)(m[k])
			}
		}
		return cty.ObjectVal(m)
	}
}

// strs is a list of strings.
func strs(ss ...string) cty.Value {
	if len(ss) == 0 {
		return cty.ListValEmpty(cty.String)
	}
	var vs []cty.Value
	for _, s := range ss {
		vs = append(vs, cty.StringVal(s))
	}
	return cty.ListVal(vs)
}

// strSet is a set of strings, as AWS answers availability_zones.
func strSet(ss ...string) cty.Value {
	if len(ss) == 0 {
		return cty.SetValEmpty(cty.String)
	}
	var vs []cty.Value
	for _, s := range ss {
		vs = append(vs, cty.StringVal(s))
	}
	return cty.SetVal(vs)
}

// mentions reports whether one of messages contains every one of parts.
func mentions(messages []string, parts ...string) bool {
	for _, m := range messages {
		all := true
		for _, p := range parts {
			if !strings.Contains(m, p) {
				all = false
			}
		}
		if all {
			return true
		}
	}
	return false
}

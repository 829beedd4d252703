package terraform

import (
	"fmt"
	"strings"
	"testing"
)

// checkValidations: a variable's validation (its condition and its error message) refers to that
// variable only, as Terraform 1.5 requires ("The condition for variable … can only refer to the
// variable itself"); a check of a variable against another belongs in a precondition. The
// evaluated checks do not see this: they evaluate the condition, whatever it names.
func checkValidations(c config) []string {
	var problems []string
	for _, v := range c.blocks("variable", "") {
		name := v.Labels[0]
		for _, val := range nested(v, "validation") {
			for _, a := range []string{"condition", "error_message"} {
				attr := val.Body.Attributes[a]
				if attr == nil {
					continue
				}
				for _, tr := range attr.Expr.Variables() {
					s := steps(tr)
					if len(s) >= 2 && s[0] == "var" && s[1] == name {
						continue
					}
					problems = append(problems, fmt.Sprintf("%s: variable %s's validation %s refers to %s, not only to var.%s", at(v), name, a, strings.Join(s, "."), name))
				}
			}
		}
	}
	return problems
}

func TestValidations(t *testing.T) {
	for _, dir := range configDirs {
		wantProblems(t, checkValidations(parseDir(t, dir)))
	}
}

func TestValidationsCatch(t *testing.T) {
	cases := []struct {
		name, src string
		want      []string
	}{
		{"itself", `variable "a" {
  type = string
  validation {
    condition     = can(regex("^x", var.a)) && var.a != "xy"
    error_message = "a must start with x, not ${var.a}."
  }
}`, nil},
		{"another variable", `variable "a" {
  type = string
  validation {
    condition     = var.a == var.b
    error_message = "a must be b."
  }
}`, []string{"condition refers to var.b"}},
		{"a local in the message", `variable "a" {
  type = string
  validation {
    condition     = var.a != ""
    error_message = "a must be given for ${local.name}."
  }
}`, []string{"error_message refers to local.name"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { wantProblems(t, checkValidations(parse(t, "snippet.tf", tc.src)), tc.want...) })
	}
}

// Command celoracle evaluates CEL expressions in the environment OCM's work
// agent compiles condition rules in (cel-go with the optional types, the
// extended strings and the Kubernetes libraries, at the versions go.mod pins),
// so tests/conditions/test_cel_oracle.py can compare our engine with it.
//
// Input: one JSON object a line, {"expr": "...", "object": {...}}.
// Output: one JSON object a line, with one of
//
//	"compile": the issue text (cel-go's display format),
//	"program": the program construction error,
//	"error":   the evaluation error text,
//	"value":   the result as a tagged tree: [type, payload], where a list's
//	           payload is its elements' trees, a map's is [key, value] pairs,
//	           a double's is strconv's shortest text, bytes are a string, and
//	           a duration, timestamp or library value is its Go text, an
//	           optional's is its content's tree (null when it has none).
//
// An evaluated expression also has "cost": cel-go's actual cost of it.
//
// With the argument -declarations it prints instead the environment's
// function declarations as JSON (see declarations below):
// workagent/conditions/celdecls.json is that output.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/decls"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/ext"
	"k8s.io/apiserver/pkg/cel/library"
)

type request struct {
	Expr   string `json:"expr"`
	Object any    `json:"object"`
}

func main() {
	env, err := cel.NewEnv(
		cel.Variable("object", cel.DynType),
		cel.OptionalTypes(), ext.Strings(),
		library.Lists(), library.Regex(), library.URLs(), library.Quantity(),
		library.IP(), library.CIDR(), library.Format(), library.SemverLib(),
		// OCM's own library (open-cluster-management.io/sdk-go), re-declared here.
		cel.Function("hasConditions", cel.Overload("status_has_conditions",
			[]*cel.Type{cel.DynType}, cel.BoolType, cel.UnaryBinding(hasConditions))),
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, "celoracle: environment:", err)
		os.Exit(1)
	}
	if len(os.Args) > 1 && os.Args[1] == "-declarations" {
		out, err := json.MarshalIndent(declarations(env), "", " ")
		if err != nil {
			fmt.Fprintln(os.Stderr, "celoracle:", err)
			os.Exit(1)
		}
		fmt.Println(string(out))
		return
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 16<<20)
	out := bufio.NewWriter(os.Stdout)
	enc := json.NewEncoder(out)
	for in.Scan() {
		var req request
		dec := json.NewDecoder(bytes.NewReader(in.Bytes()))
		// Whole numbers as int64, as the agent's unstructured objects hold them.
		dec.UseNumber()
		if err := dec.Decode(&req); err != nil {
			fmt.Fprintln(os.Stderr, "celoracle: bad request line:", err)
			os.Exit(1)
		}
		if err := enc.Encode(evaluate(env, req)); err != nil {
			fmt.Fprintln(os.Stderr, "celoracle:", err)
			os.Exit(1)
		}
		// One answer per line as soon as it is known: the caller may pipe.
		out.Flush()
	}
	if err := in.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "celoracle: reading:", err)
		os.Exit(1)
	}
}

func evaluate(env *cel.Env, req request) map[string]any {
	ast, iss := env.Compile(req.Expr)
	if iss.Err() != nil {
		return map[string]any{"compile": iss.Err().Error()}
	}
	// Cost tracked as OCM's agent tracks it: its estimator answers for none of
	// these libraries' functions, so cel-go's default call costs apply.
	prg, err := env.Program(ast, cel.CostTracking(nil), cel.CostLimit(perCallLimit))
	if err != nil {
		return map[string]any{"program": err.Error()}
	}
	val, det, err := prg.Eval(map[string]any{"object": numbers(req.Object)})
	answer := map[string]any{"cost": *det.ActualCost()}
	if err != nil {
		answer["error"] = err.Error()
	} else {
		answer["value"] = tagged(val)
	}
	return answer
}

// perCallLimit is Kubernetes' per-call CEL cost limit, which OCM's agent sets.
const perCallLimit = 1000000

// numbers turns the decoder's json.Numbers into int64 or float64.
func numbers(v any) any {
	switch v := v.(type) {
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i
		}
		f, _ := v.Float64()
		return f
	case map[string]any:
		for k, item := range v {
			v[k] = numbers(item)
		}
	case []any:
		for i, item := range v {
			v[i] = numbers(item)
		}
	}
	return v
}

// tagged is the [type, payload] tree of a CEL value.
func tagged(val ref.Val) []any {
	name := val.Type().TypeName()
	switch v := val.(type) {
	case types.Null:
		return []any{name, nil}
	case types.Double:
		f := float64(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return []any{name, fmt.Sprint(f)}
		}
		return []any{name, strconv.FormatFloat(f, 'g', -1, 64)}
	case types.Bytes:
		return []any{name, string(v)}
	case types.Duration:
		return []any{name, v.Duration.String()}
	case types.Timestamp:
		return []any{name, v.Time.UTC().Format(time.RFC3339Nano)}
	case *types.Type:
		return []any{name, v.TypeName()}
	case *types.Optional:
		if !v.HasValue() {
			return []any{name, nil}
		}
		return []any{name, tagged(v.GetValue())}
	case traits.Mapper:
		pairs := []any{}
		for it := v.Iterator(); it.HasNext() == types.True; {
			key := it.Next()
			pairs = append(pairs, []any{tagged(key), tagged(v.Get(key))})
		}
		return []any{name, pairs}
	case traits.Lister:
		items := []any{}
		for it := v.Iterator(); it.HasNext() == types.True; {
			items = append(items, tagged(it.Next()))
		}
		return []any{name, items}
	}
	switch native := val.Value().(type) {
	case bool, int64, uint64, string, nil:
		return []any{name, native}
	default:
		return []any{name, fmt.Sprint(native)}
	}
}

// hasConditions is OCM's: whether a map's "conditions" is a non-empty list.
func hasConditions(value ref.Val) ref.Val {
	status, ok := value.(traits.Mapper)
	if !ok {
		return types.False
	}
	found, ok := status.Find(types.String("conditions"))
	if !ok {
		return types.False
	}
	list, ok := found.(traits.Lister)
	return types.Bool(ok && list.Size() != types.Int(0))
}

// overload is one declared signature: its id, whether it is called as a
// method (the receiver is the first argument), its type parameters, the
// argument types and the result type, each type as typeTree gives it.
type overload struct {
	ID     string   `json:"id"`
	Member bool     `json:"member,omitempty"`
	Params []string `json:"params,omitempty"`
	Args   []any    `json:"args"`
	Result any      `json:"result"`
	// Disabled: the checker leaves it out, but for a bug of cel-go's: the
	// scopes of a comprehension's body do not inherit the list of disabled
	// overloads, so there it is tried like any other.
	Disabled bool `json:"disabled,omitempty"`
}

// numericKinds are the kinds of the comparisons cel-go's checker disables
// unless cross-type numeric comparisons are enabled (OCM does not enable them).
var numericKinds = map[types.Kind]bool{types.IntKind: true, types.UintKind: true, types.DoubleKind: true}

// declarations lists every function of the environment, by name, with its
// overloads in the order the checker tries them.
func declarations(env *cel.Env) map[string][]overload {
	functions := env.Functions()
	names := make([]string, 0, len(functions))
	for name := range functions {
		names = append(names, name)
	}
	sort.Strings(names)
	result := make(map[string][]overload, len(names))
	for _, name := range names {
		var overloads []overload
		for _, o := range functions[name].OverloadDecls() {
			args := []any{}
			for _, t := range o.ArgTypes() {
				args = append(args, typeTree(t))
			}
			// cel-go collects an overload's type parameters in a map: sorted here.
			params := o.TypeParams()
			sort.Strings(params)
			overloads = append(overloads, overload{
				ID: o.ID(), Member: o.IsMemberFunction(), Params: params,
				Args: args, Result: typeTree(o.ResultType()),
				Disabled: crossNumeric(name, o),
			})
		}
		result[name] = overloads
	}
	return result
}

func crossNumeric(name string, o *decls.OverloadDecl) bool {
	switch name {
	case "_<_", "_<=_", "_>_", "_>=_":
		args := o.ArgTypes()
		return len(args) == 2 && numericKinds[args[0].Kind()] && numericKinds[args[1].Kind()] &&
			args[0].Kind() != args[1].Kind()
	}
	return false
}

// typeTree is a type as JSON: a name ("int", "dyn", "net.IP"), {"param": "A"}
// for a type parameter, or [name, parameter...] for list, map, type and the
// parameterized opaque types. "kind" tells an object type from an opaque one.
func typeTree(t *types.Type) any {
	if t.Kind() == types.TypeParamKind {
		return map[string]string{"param": t.TypeName()}
	}
	name := t.DeclaredTypeName()
	switch t.Kind() {
	case types.DurationKind:
		name = "duration"
	case types.TimestampKind:
		name = "timestamp"
	case types.NullTypeKind:
		name = "null"
	case types.ListKind, types.MapKind, types.TypeKind, types.OpaqueKind:
		name = t.TypeName()
	}
	if len(t.Parameters()) == 0 {
		if t.Kind() == types.StructKind {
			return map[string]string{"object": name}
		}
		return name
	}
	tree := []any{name}
	for _, p := range t.Parameters() {
		tree = append(tree, typeTree(p))
	}
	return tree
}

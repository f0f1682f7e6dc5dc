package expr

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/wire/mongoerr"
)

// fakeFunction is a FunctionHook without JavaScript: the body "count" returns how many
// arguments it got (as a double, as JavaScript's numbers convert), "bad" fails to compile.
func fakeFunction(body string) (func([]bsoncore.Value) (bsoncore.Value, error), error) {
	if body != "count" {
		return nil, mongoerr.New(mongoerr.JSInterpreterFailure, "SyntaxError: %s", body)
	}
	return func(args []bsoncore.Value) (bsoncore.Value, error) {
		return bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, float64(len(args)))}, nil
	}, nil
}

// functionCases are $function specs, the document and the result or error code.
var functionCases = []evalCase{
	{"Call", `{"$function": {"body": "count", "args": ["$a", 1, "$b"], "lang": "js"}}`, `{"a": 1}`, `3.0`},
	{"BodyCode", `{"$function": {"body": {"$code": "count"}, "args": [], "lang": "js"}}`, `{}`, `0.0`},
	{"ArgsPath", `{"$function": {"body": "count", "args": "$arr", "lang": "js"}}`, `{"arr": [1, 2]}`, `2.0`},
	{"ArgsNotArray", `{"$function": {"body": "count", "args": "$a", "lang": "js"}}`, `{"a": 1}`, `ERR 31266`},
	{"NotObject", `{"$function": "count"}`, `{}`, `ERR 31260`},
	{"NoBody", `{"$function": {"args": [], "lang": "js"}}`, `{}`, `ERR 31261`},
	{"BodyNotConstant", `{"$function": {"body": "$a", "args": [], "lang": "js"}}`, `{}`, `ERR 31432`},
	{"BodyNotString", `{"$function": {"body": 1, "args": [], "lang": "js"}}`, `{}`, `ERR 31262`},
	{"NoArgs", `{"$function": {"body": "count", "lang": "js"}}`, `{}`, `ERR 31263`},
	{"NoLang", `{"$function": {"body": "count", "args": []}}`, `{}`, `ERR 31418`},
	{"OtherLang", `{"$function": {"body": "count", "args": [], "lang": "python"}}`, `{}`, `ERR 31419`},
	{"CompileErrorAtEval", `{"$function": {"body": "bad", "args": [], "lang": "js"}}`, `{}`, `ERR 139`},
}

func TestEvalFunction(t *testing.T) {
	for _, tc := range functionCases {
		t.Run(tc.name, func(t *testing.T) {
			x, err := Compile(val(t, tc.expr), &Options{Now: testNow, Function: fakeFunction})
			if err != nil {
				checkResult(t, tc.want, missing, err)
				return
			}
			got, err := x.Eval(doc(t, tc.doc), NewVars())
			checkResult(t, tc.want, got, err)
		})
	}
}

func TestEvalFunctionNoScriptEngine(t *testing.T) {
	x, err := Compile(val(t, `{"$function": {"body": "count", "args": [], "lang": "js"}}`), nil)
	if err != nil {
		t.Fatal(err) // as in MongoDB, parsing needs no engine: evaluating does
	}
	_, err = x.Eval(doc(t, `{}`), nil)
	checkResult(t, "ERR 31264", missing, err)
}

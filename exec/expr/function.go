package expr

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// functionNode is $function: a JavaScript function called with the evaluated args. It is
// never folded: a function may return something else at each call (Math.random()).
type functionNode struct {
	args node
	call func(args []bsoncore.Value) (bsoncore.Value, error)
	err  error // the body's compilation error, or no script engine: reported at evaluation
}

// parseFunction compiles {$function: {body, args, lang: "js"}} with MongoDB's checks, in
// its order (ExpressionFunction::parse).
func parseFunction(p *parser, _ string, arg bsoncore.Value) (node, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.Location31260, "$function requires an object as an argument, found: %s", bsonx.TypeName(arg.Type))
	}
	d := arg.Document()
	bodyVal, err := d.LookupErr("body")
	if err != nil {
		return nil, mongoerr.New(mongoerr.Location31261, "The body function must be specified.")
	}
	body, err := constantSource(p, bodyVal)
	if err != nil {
		return nil, err
	}
	argsVal, err := d.LookupErr("args")
	if err != nil {
		return nil, mongoerr.New(mongoerr.Location31263, "The args field must be specified.")
	}
	args, err := p.parse(argsVal)
	if err != nil {
		return nil, err
	}
	lang, err := d.LookupErr("lang")
	if err != nil {
		return nil, mongoerr.New(mongoerr.Location31418, "The lang field must be specified.")
	}
	if s, ok := lang.StringValueOK(); !ok || s != "js" {
		return nil, mongoerr.New(mongoerr.Location31419, "Currently the only supported language specifier is 'js'.")
	}
	n := &functionNode{args: args}
	if p.fn == nil {
		n.err = NoScriptEngine()
	} else {
		n.call, n.err = p.fn(body)
	}
	return n, nil
}

// constantSource returns the source of $function's body: a constant string or Code.
func constantSource(p *parser, v bsoncore.Value) (string, error) {
	c, err := p.parse(v)
	if err != nil {
		return "", err
	}
	k, ok := c.(*constNode)
	if !ok {
		return "", mongoerr.New(mongoerr.Location31432, "The body function must be a constant expression")
	}
	switch k.v.Type {
	case bsoncore.TypeString:
		return k.v.StringValue(), nil
	case bsoncore.TypeJavaScript:
		return k.v.JavaScript(), nil
	}
	return "", mongoerr.New(mongoerr.Location31262, "The body function must evaluate to type string or code")
}

// NoScriptEngine is MongoDB's error for JavaScript on a server without a script engine
// (getJsExecWithScope's 31264).
func NoScriptEngine() error {
	return mongoerr.New(mongoerr.Location31264, "Cannot run server-side javascript without the javascript engine enabled")
}

// eval implements node.
func (n *functionNode) eval(v *Vars) (bsoncore.Value, error) {
	if n.err != nil {
		return bsoncore.Value{}, n.err
	}
	a, err := n.args.eval(v)
	if err != nil {
		return bsoncore.Value{}, err
	}
	if a.Type != bsoncore.TypeArray {
		return bsoncore.Value{}, mongoerr.New(mongoerr.Location31266, "The args field must be of type array")
	}
	return n.call(arrayValues(a))
}

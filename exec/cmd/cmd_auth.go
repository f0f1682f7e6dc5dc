package cmd

import (
	"context"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/access"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// addAuthCommands registers authentication and the user and role commands.
func (e *Server) addAuthCommands(add func(*Command)) {
	none := auth.ActionNone
	add(&Command{Name: "saslStart", Run: e.saslStart, Action: none, Help: "first step of a SASL authentication", Props: Legacy | APIV1})
	add(&Command{Name: "saslContinue", Run: e.saslContinue, Action: none, Help: "next step of a SASL authentication", Props: Legacy | APIV1})
	add(&Command{Name: "authenticate", Run: e.authenticate, Action: none, Help: "authenticate with MONGODB-X509 (not supported)", Props: Legacy | APIV1})
	add(&Command{Name: "logout", Run: e.logout, Action: none, Help: "de-authenticate"})
	e.addUserCommands(add)
	e.addRoleCommands(add)
}

// saslStart begins a SCRAM conversation.
func (e *Server) saslStart(_ context.Context, r *Request) error {
	a, err := access.ParseStart(r.Name, r.Body, r.DB)
	if err != nil {
		return err
	}
	out, err := e.Access.Start(&r.Conn.Authn, a, r.Conn.log)
	if err != nil {
		return err
	}
	r.Out = append(r.Out, out...)
	return nil
}

// saslContinue runs the next step of the connection's conversation.
func (e *Server) saslContinue(_ context.Context, r *Request) (err error) {
	r.Out, err = access.Continue(&r.Conn.Authn, r.Name, r.Body, r.Out, r.Conn.log)
	return err
}

// authenticate answers the legacy authenticate command: cleave has no MONGODB-X509 (nor
// MONGODB-CR, which MongoDB removed).
func (e *Server) authenticate(_ context.Context, r *Request) error {
	mech, _ := r.Body.Lookup("mechanism").StringValueOK()
	if mech == "" {
		mech = "MONGODB-CR"
	}
	return mongoerr.New(mongoerr.MechanismUnavailable, "Received authentication for mechanism %s which is not enabled", mech)
}

// logout forgets the connection's users (and any conversation under way).
func (e *Server) logout(_ context.Context, r *Request) error {
	r.Conn.Authn.Logout()
	return nil
}

// connectionStatus reports the connection's authenticated users and their roles, inherited
// ones included.
func (e *Server) connectionStatus(_ context.Context, r *Request) error {
	showPrivileges := false
	if v, err := r.Body.LookupErr("showPrivileges"); err == nil {
		showPrivileges, _ = args.Bool(r.Name, "showPrivileges", v)
	}
	reg := e.Access.Registry()
	var roles []auth.RoleName
	idx, out := bsoncore.AppendDocumentElementStart(r.Out, "authInfo")
	aidx, out := bsoncore.AppendArrayElementStart(out, "authenticatedUsers")
	for i, name := range r.Conn.Authn.Users {
		out = appendUserName(out, bsonx.ArrayKey(i), name)
		if u := reg.User(name); u != nil {
			roles = append(roles, reg.Inherited(u.Roles)...)
		}
	}
	out, _ = bsoncore.AppendArrayEnd(out, aidx)
	slices.SortFunc(roles, func(a, b auth.RoleName) int { return strings.Compare(a.String(), b.String()) })
	out = auth.AppendRoleNames(out, "authenticatedUserRoles", slices.Compact(roles))
	if showPrivileges {
		out = appendStringArray(out, "authenticatedUserPrivileges", nil)
	}
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	r.Out = out
	return nil
}

package users

import (
	"context"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/access"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Add registers authentication and the user and role commands.
func (h *Handlers) Add(add func(*command.Command)) {
	none := auth.ActionNone
	add(&command.Command{Name: "saslStart", Run: h.saslStart, Action: none, Help: "first step of a SASL authentication", Props: command.Legacy | command.APIV1})
	add(&command.Command{Name: "saslContinue", Run: h.saslContinue, Action: none, Help: "next step of a SASL authentication", Props: command.Legacy | command.APIV1})
	add(&command.Command{Name: "authenticate", Run: h.authenticate, Action: none, Help: "authenticate with MONGODB-X509 (not supported)", Props: command.Legacy | command.APIV1})
	add(&command.Command{Name: "logout", Run: h.logout, Action: none, Help: "de-authenticate"})
	add(&command.Command{Name: "connectionStatus", Run: h.connectionStatus, Action: auth.ActionNone, Help: "Returns connection-specific information such as logged-in users and their roles"})
	h.addUserCommands(add)
	h.addRoleCommands(add)
}

// saslStart begins a SCRAM conversation.
func (h *Handlers) saslStart(_ context.Context, r *command.Request) error {
	a, err := access.ParseStart(r.Name, r.Body, r.DB)
	if err != nil {
		return err
	}
	out, err := h.Access.Start(&r.Conn.Authn, a, r.Conn.Log)
	if err != nil {
		return err
	}
	r.Out = append(r.Out, out...)
	return nil
}

// saslContinue runs the next step of the connection's conversation.
func (h *Handlers) saslContinue(_ context.Context, r *command.Request) (err error) {
	r.Out, err = access.Continue(&r.Conn.Authn, r.Name, r.Body, r.Out, r.Conn.Log)
	return err
}

// authenticate answers the legacy authenticate command: cleave has no MONGODB-X509 (nor
// MONGODB-CR, which MongoDB removed).
func (h *Handlers) authenticate(_ context.Context, r *command.Request) error {
	mech, _ := r.Body.Lookup("mechanism").StringValueOK()
	if mech == "" {
		mech = "MONGODB-CR"
	}
	return mongoerr.New(mongoerr.MechanismUnavailable, "Received authentication for mechanism %s which is not enabled", mech)
}

// logout forgets the connection's users (and any conversation under way).
func (h *Handlers) logout(_ context.Context, r *command.Request) error {
	r.Conn.Authn.Logout()
	return nil
}

// connectionStatus reports the connection's authenticated users and their roles, inherited
// ones included.
func (h *Handlers) connectionStatus(_ context.Context, r *command.Request) error {
	showPrivileges := false
	if v, err := r.Body.LookupErr("showPrivileges"); err == nil {
		showPrivileges, _ = args.Bool(r.Name, "showPrivileges", v)
	}
	reg := h.Access.Registry()
	var roles []auth.RoleName
	idx, out := bsoncore.AppendDocumentElementStart(r.Out, "authInfo")
	aidx, out := bsoncore.AppendArrayElementStart(out, "authenticatedUsers")
	for i, name := range r.Conn.Authn.Users {
		out = auth.AppendUserName(out, bsonx.ArrayKey(i), name)
		if u := reg.User(name); u != nil {
			roles = append(roles, reg.Inherited(u.Roles)...)
		}
	}
	out, _ = bsoncore.AppendArrayEnd(out, aidx)
	slices.SortFunc(roles, func(a, b auth.RoleName) int { return strings.Compare(a.String(), b.String()) })
	out = auth.AppendRoleNames(out, "authenticatedUserRoles", slices.Compact(roles))
	if showPrivileges {
		out = bsonx.AppendStringArray(out, "authenticatedUserPrivileges", nil)
	}
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	r.Out = out
	return nil
}

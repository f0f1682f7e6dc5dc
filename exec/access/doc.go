// Package access is access control as the server runs it: the users and roles of the
// deployment (kept in the catalog as security records and compiled into an auth.Registry),
// who each connection authenticated as, the SASL conversations that authenticate it (SCRAM,
// also inside hello's speculativeAuthenticate), the cluster's internal user derived from the
// key file, and the check of a command's needs against the connection's users. The model
// itself — users, roles, privileges, SCRAM — is package auth's; the commands that manage
// users and roles are exec/command/users'.
//
//	st, err := access.New(access.Options{Enabled: true}, catalog, log)
//	if !st.Allowed(conn, []auth.Need{{Action: auth.ActionRead, DB: "shop", Coll: "orders"}}) { ... }
package access

package users

import (
	"context"
	"slices"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/access"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// addUserCommands registers the user management commands.
func (h *Handlers) addUserCommands(add func(*command.Command)) {
	ua := auth.ActionUserAdmin
	add(&command.Command{Name: "createUser", Run: h.createUser, Action: ua, Needs: roleGrantNeeds, Help: "Adds a user to the system", Props: command.APIV1})
	add(&command.Command{Name: "updateUser", Run: h.updateUser, Action: ua, Needs: roleGrantNeeds, Help: "Used to update a user, for example to change its password", Props: command.APIV1})
	add(&command.Command{Name: "dropUser", Run: h.dropUser, Action: ua, Help: "Drops a single user.", Props: command.APIV1})
	add(&command.Command{Name: "dropAllUsersFromDatabase", Run: h.dropAllUsersFromDatabase, Action: ua, Help: "Drops all users for a single database."})
	add(&command.Command{Name: "grantRolesToUser", Run: h.grantRolesToUser, Action: ua, Needs: roleGrantNeeds, Help: "Grants roles to a user.", Props: command.APIV1})
	add(&command.Command{Name: "revokeRolesFromUser", Run: h.revokeRolesFromUser, Action: ua, Needs: roleGrantNeeds, Help: "Revokes roles from a user.", Props: command.APIV1})
	add(&command.Command{Name: "usersInfo", Run: h.usersInfo, Action: ua, Needs: usersInfoNeeds, Help: "Returns information about users."})
}

// roleGrantNeeds adds, to the command's own need, userAdmin on the database of every role the
// command grants or revokes (MongoDB's grantRole action on the role's database).
func roleGrantNeeds(r *command.Request, def auth.Need) []auth.Need {
	needs := []auth.Need{def}
	roles, _ := parseRoleNames(r.Name, "roles", r.Body.Lookup("roles"), r.DB)
	for _, role := range roles {
		needs = append(needs, auth.Need{Action: auth.ActionUserAdmin, DB: role.DB})
	}
	return needs
}

// usersInfoNeeds lets any user look at itself; other users need userAdmin.
func usersInfoNeeds(r *command.Request, def auth.Need) []auth.Need {
	names, all, err := parseUsersInfoArg(r)
	if err != nil || all || len(names) == 0 {
		return []auth.Need{def}
	}
	for _, n := range names {
		if !slices.Contains(r.Conn.Authn.Users, n) {
			return []auth.Need{def}
		}
	}
	return []auth.Need{{Action: auth.ActionAuthenticated}}
}

// parseRoleNames parses a roles array: "name" (a role of db) or {role, db}.
func parseRoleNames(cmd, field string, v bsoncore.Value, db string) ([]auth.RoleName, error) {
	arr, err := args.Array(cmd, field, v)
	if err != nil {
		return nil, err
	}
	vals, _ := arr.Values()
	out := make([]auth.RoleName, 0, len(vals))
	for _, rv := range vals {
		if s, ok := rv.StringValueOK(); ok {
			out = append(out, auth.RoleName{Role: s, DB: db})
			continue
		}
		d, ok := rv.DocumentOK()
		if !ok {
			return nil, mongoerr.New(mongoerr.BadValue, "Role names must be either strings or objects")
		}
		var rn auth.RoleName
		var okRole, okDB bool
		rn.Role, okRole = d.Lookup("role").StringValueOK()
		rn.DB, okDB = d.Lookup("db").StringValueOK()
		if !okRole || !okDB {
			return nil, mongoerr.New(mongoerr.BadValue, "Role names must have string fields 'role' and 'db'")
		}
		out = append(out, rn)
	}
	return out, nil
}

// checkRolesExist fails with RoleNotFound for the first role that does not exist.
func checkRolesExist(reg *auth.Registry, roles []auth.RoleName) error {
	for _, role := range roles {
		if !reg.RoleExists(role) {
			return mongoerr.New(mongoerr.RoleNotFound, "Could not find role: %s", role)
		}
	}
	return nil
}

// userSpec is what createUser and updateUser may set.
type userSpec struct {
	name       string
	pwd        *string
	roles      []auth.RoleName
	rolesSet   bool
	customData bsoncore.Document
	mechanisms []auth.Mechanism
}

// parseUserSpec parses createUser's or updateUser's body.
func parseUserSpec(r *command.Request) (userSpec, error) {
	var s userSpec
	first, _ := bsonx.FirstElement(r.Body)
	name, err := args.String(r.Name, r.Name, first.Value())
	if err != nil {
		return s, err
	}
	s.name = name
	err = args.ForEach(r.Name, r.Body, func(key string, v bsoncore.Value) (bool, error) {
		var err error
		switch key {
		case "pwd":
			var p string
			if p, err = args.String(r.Name, key, v); err == nil {
				s.pwd = &p
			}
		case "roles":
			s.roles, err = parseRoleNames(r.Name, key, v, r.DB)
			s.rolesSet = true
		case "customData":
			s.customData, err = args.Doc(r.Name, key, v)
		case "mechanisms":
			s.mechanisms, err = parseMechanisms(r.Name, v)
		case "digestPassword":
			var d bool
			if d, err = args.Bool(r.Name, key, v); err == nil && !d {
				err = mongoerr.New(mongoerr.BadValue, "Use of SCRAM-SHA-256 requires undigested passwords")
			}
		case "authenticationRestrictions":
			err = mongoerr.New(mongoerr.NotImplemented, "authenticationRestrictions are not supported")
		default:
			return false, nil
		}
		return true, err
	})
	return s, err
}

// checkPassword refuses what MongoDB's buildCredentials cannot derive SCRAM-SHA-256 keys
// from: an empty password, which its SASLprep (ICU) fails to convert. mechs are the
// command's mechanisms (nil: the server's, SCRAM-SHA-256 among them); without SCRAM-SHA-256
// an empty password is taken.
func checkPassword(pwd string, mechs []auth.Mechanism) error {
	if pwd == "" && (mechs == nil || slices.Contains(mechs, auth.SCRAMSHA256)) {
		return mongoerr.New(mongoerr.Location50687, "Error preflighting UTF-8 conversion: U_STRING_NOT_TERMINATED_WARNING")
	}
	return nil
}

// parseMechanisms parses a mechanisms array.
func parseMechanisms(cmd string, v bsoncore.Value) ([]auth.Mechanism, error) {
	arr, err := args.Array(cmd, "mechanisms", v)
	if err != nil {
		return nil, err
	}
	vals, _ := arr.Values()
	if len(vals) == 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "mechanisms field must not be empty")
	}
	var out []auth.Mechanism
	for _, mv := range vals {
		s, _ := mv.StringValueOK()
		m, err := auth.ParseMechanism(s)
		if err != nil {
			return nil, mongoerr.New(mongoerr.BadValue, "Unknown auth mechanism '%s'", s)
		}
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out, nil
}

// createUser adds a user to r.DB.
func (h *Handlers) createUser(_ context.Context, r *command.Request) error {
	s, err := parseUserSpec(r)
	if err != nil {
		return err
	}
	if !s.rolesSet {
		return args.Missing(r.Name, "roles")
	}
	if s.pwd == nil {
		return mongoerr.New(mongoerr.BadValue, "Must provide a 'pwd' field for all user documents, except those with '$external' as the user's source db")
	}
	if err := checkPassword(*s.pwd, s.mechanisms); err != nil {
		return err
	}
	if s.name == "" { // V2UserDocumentParser, after the credentials are built
		return mongoerr.New(mongoerr.BadValue, "User document needs 'user' field to be non-empty")
	}
	mechs := s.mechanisms
	if mechs == nil {
		mechs = auth.Mechanisms
	}
	name := auth.UserName{User: s.name, DB: r.DB}
	u, err := access.NewUser(name, *s.pwd, mechs)
	if err != nil {
		return err
	}
	u.Roles, u.CustomData = s.roles, s.customData
	return h.Access.Change(func(reg *auth.Registry) (puts, dels []store.SecurityRecord, err error) {
		if reg.User(name) != nil {
			return nil, nil, mongoerr.New(mongoerr.Location51003, "User \"%s@%s\" already exists", name.User, name.DB)
		}
		if len(r.Conn.Authn.Users) == 0 && h.Access.Enabled() && reg.HasUsers() {
			// The localhost exception ended while this command waited for the lock.
			return nil, nil, mongoerr.New(mongoerr.Unauthorized, "Command %s requires authentication", r.Name)
		}
		if err := checkRolesExist(reg, u.Roles); err != nil {
			return nil, nil, err
		}
		return []store.SecurityRecord{access.UserRecord(u)}, nil, nil
	})
}

// MongoDB words a missing user three ways, by where the command finds out:
//
//	grantRolesToUser, revokeRolesFromUser (acquireUser)  Could not find user "u" for db "db"
//	updateUser (updatePrivilegeDocument)                 User u@db not found
//	dropUser (its count of removed documents)            User 'u@db' not found

// errUserNotFound is the AuthorizationManager's UserNotFound for name.
func errUserNotFound(name auth.UserName) error {
	return mongoerr.New(mongoerr.UserNotFound, "Could not find user \"%s\" for db \"%s\"", name.User, name.DB)
}

// errUserNotUpdated is updatePrivilegeDocument's UserNotFound for name.
func errUserNotUpdated(name auth.UserName) error {
	return mongoerr.New(mongoerr.UserNotFound, "User %s@%s not found", name.User, name.DB)
}

// errUserNotDropped is dropUser's UserNotFound for name.
func errUserNotDropped(name auth.UserName) error {
	return mongoerr.New(mongoerr.UserNotFound, "User '%s@%s' not found", name.User, name.DB)
}

// changeUser applies fn to a copy of user name of r.DB and stores the result; a missing
// user fails with missing(name), after check (nil: none) has passed.
func (h *Handlers) changeUser(name auth.UserName, missing func(auth.UserName) error, check func(*auth.Registry) error,
	fn func(reg *auth.Registry, u *auth.User) error) error {
	return h.Access.Change(func(reg *auth.Registry) (puts, dels []store.SecurityRecord, err error) {
		if check != nil {
			if err := check(reg); err != nil {
				return nil, nil, err
			}
		}
		old := reg.User(name)
		if old == nil {
			return nil, nil, missing(name)
		}
		u := *old
		u.Roles = slices.Clone(old.Roles)
		if err := fn(reg, &u); err != nil {
			return nil, nil, err
		}
		return []store.SecurityRecord{access.UserRecord(&u)}, nil, nil
	})
}

// updateUser changes a user's password, roles, custom data or mechanisms.
func (h *Handlers) updateUser(_ context.Context, r *command.Request) error {
	s, err := parseUserSpec(r)
	if err != nil {
		return err
	}
	if s.pwd != nil {
		if err := checkPassword(*s.pwd, s.mechanisms); err != nil {
			return err
		}
	}
	if s.pwd == nil && !s.rolesSet && s.customData == nil && s.mechanisms == nil {
		return mongoerr.New(mongoerr.BadValue, "Must specify at least one field to update in updateUser")
	}
	name := auth.UserName{User: s.name, DB: r.DB}
	// MongoDB checks the roles it is given before it looks for the user.
	rolesExist := func(reg *auth.Registry) error {
		if s.rolesSet {
			return checkRolesExist(reg, s.roles)
		}
		return nil
	}
	return h.changeUser(name, errUserNotUpdated, rolesExist, func(_ *auth.Registry, u *auth.User) error {
		switch {
		case s.pwd != nil:
			mechs := s.mechanisms
			if mechs == nil {
				mechs = u.Mechanisms()
			}
			fresh, err := access.NewUser(name, *s.pwd, mechs)
			if err != nil {
				return err
			}
			u.Credentials = fresh.Credentials
		case s.mechanisms != nil:
			// Without a password, mechanisms can only narrow what the user has.
			creds := map[auth.Mechanism]auth.Credential{}
			for _, m := range s.mechanisms {
				c, ok := u.Credentials[m]
				if !ok {
					return mongoerr.New(mongoerr.BadValue, "mechanisms field must be a subset of previously set mechanisms")
				}
				creds[m] = c
			}
			u.Credentials = creds
		}
		if s.rolesSet {
			u.Roles = s.roles
		}
		if s.customData != nil {
			u.CustomData = s.customData
		}
		return nil
	})
}

// userNameArg reads the user name a command names in its first field.
func userNameArg(r *command.Request) (auth.UserName, error) {
	first, _ := bsonx.FirstElement(r.Body)
	name, err := args.String(r.Name, r.Name, first.Value())
	return auth.UserName{User: name, DB: r.DB}, err
}

// dropUser removes a user.
func (h *Handlers) dropUser(_ context.Context, r *command.Request) error {
	name, err := userNameArg(r)
	if err != nil {
		return err
	}
	return h.Access.Change(func(reg *auth.Registry) (puts, dels []store.SecurityRecord, err error) {
		if reg.User(name) == nil {
			return nil, nil, errUserNotDropped(name)
		}
		return nil, []store.SecurityRecord{{Kind: access.RecordUser, DB: name.DB, Name: name.User}}, nil
	})
}

// dropAllUsersFromDatabase removes every user of r.DB and reports how many.
func (h *Handlers) dropAllUsersFromDatabase(_ context.Context, r *command.Request) error {
	var n int
	err := h.Access.Change(func(reg *auth.Registry) (puts, dels []store.SecurityRecord, err error) {
		for _, u := range reg.Users(r.DB) {
			dels = append(dels, store.SecurityRecord{Kind: access.RecordUser, DB: u.Name.DB, Name: u.Name.User})
		}
		n = len(dels)
		return nil, dels, nil
	})
	if err != nil {
		return err
	}
	r.Out = bsoncore.AppendInt32Element(r.Out, "n", int32(n))
	return nil
}

// grantRolesToUser adds roles to a user.
func (h *Handlers) grantRolesToUser(_ context.Context, r *command.Request) error {
	return h.changeUserRoles(r, func(have []auth.RoleName, roles []auth.RoleName) []auth.RoleName {
		for _, role := range roles {
			if !slices.Contains(have, role) {
				have = append(have, role)
			}
		}
		return have
	})
}

// revokeRolesFromUser removes roles from a user.
func (h *Handlers) revokeRolesFromUser(_ context.Context, r *command.Request) error {
	return h.changeUserRoles(r, func(have []auth.RoleName, roles []auth.RoleName) []auth.RoleName {
		return slices.DeleteFunc(have, func(role auth.RoleName) bool { return slices.Contains(roles, role) })
	})
}

// changeUserRoles parses {<cmd>: user, roles: [...]} and replaces the user's roles with
// apply(current, roles); granted roles must exist.
func (h *Handlers) changeUserRoles(r *command.Request, apply func(have, roles []auth.RoleName) []auth.RoleName) error {
	name, err := userNameArg(r)
	if err != nil {
		return err
	}
	var roles []auth.RoleName
	rolesSet := false
	err = args.ForEach(r.Name, r.Body, func(key string, v bsoncore.Value) (bool, error) {
		if key != "roles" {
			return false, nil
		}
		rolesSet = true
		var err error
		roles, err = parseRoleNames(r.Name, key, v, r.DB)
		return true, err
	})
	if err != nil {
		return err
	}
	if !rolesSet {
		return args.Missing(r.Name, "roles")
	}
	grant := r.Name == "grantRolesToUser"
	return h.changeUser(name, errUserNotFound, nil, func(reg *auth.Registry, u *auth.User) error {
		if grant {
			if err := checkRolesExist(reg, roles); err != nil {
				return err
			}
		}
		u.Roles = apply(u.Roles, roles)
		return nil
	})
}

// parseUsersInfoArg reads usersInfo's argument: 1 (every user of the database), "name",
// {user, db}, an array of those, or {forAllDBs: true}.
func parseUsersInfoArg(r *command.Request) (names []auth.UserName, all bool, err error) {
	first, _ := bsonx.FirstElement(r.Body)
	v := first.Value()
	one := func(v bsoncore.Value) error {
		if s, ok := v.StringValueOK(); ok {
			names = append(names, auth.UserName{User: s, DB: r.DB})
			return nil
		}
		d, ok := v.DocumentOK()
		if !ok {
			return mongoerr.New(mongoerr.BadValue, "User name must be either a string or an object")
		}
		var n auth.UserName
		var okUser, okDB bool
		n.User, okUser = d.Lookup("user").StringValueOK()
		n.DB, okDB = d.Lookup("db").StringValueOK()
		if !okUser || !okDB {
			return mongoerr.New(mongoerr.BadValue, "User name objects need string fields 'user' and 'db'")
		}
		names = append(names, n)
		return nil
	}
	switch v.Type {
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble:
		return nil, false, nil
	case bsoncore.TypeEmbeddedDocument:
		if fa, ok := v.Document().Lookup("forAllDBs").BooleanOK(); ok && fa {
			return nil, true, nil
		}
		err = one(v)
	case bsoncore.TypeArray:
		vals, _ := v.Array().Values()
		for _, uv := range vals {
			if err = one(uv); err != nil {
				break
			}
		}
	default:
		err = one(v)
	}
	return names, false, err
}

// usersInfo describes users in MongoDB's shape: {_id, userId, user, db, [credentials],
// roles, [customData], mechanisms}.
func (h *Handlers) usersInfo(_ context.Context, r *command.Request) error {
	names, all, err := parseUsersInfoArg(r)
	if err != nil {
		return err
	}
	showCredentials, showCustomData := false, true
	err = args.ForEach(r.Name, r.Body, func(key string, v bsoncore.Value) (bool, error) {
		var err error
		switch key {
		case "showCredentials":
			showCredentials, err = args.Bool(r.Name, key, v)
		case "showCustomData":
			showCustomData, err = args.Bool(r.Name, key, v)
		case "showPrivileges", "showAuthenticationRestrictions":
		case "filter":
			err = mongoerr.New(mongoerr.NotImplemented, "usersInfo's filter is not supported")
		default:
			return false, nil
		}
		return true, err
	})
	if err != nil {
		return err
	}
	reg := h.Access.Registry()
	var users []*auth.User
	switch {
	case all:
		users = reg.Users("")
	case names == nil:
		users = reg.Users(r.DB)
	default:
		for _, n := range names {
			if u := reg.User(n); u != nil {
				users = append(users, u)
			}
		}
	}
	idx, out := bsoncore.AppendArrayElementStart(r.Out, "users")
	for i, u := range users {
		out = appendUserInfo(out, bsonx.ArrayKey(i), u, showCredentials, showCustomData)
	}
	out, _ = bsoncore.AppendArrayEnd(out, idx)
	r.Out = out
	return nil
}

// appendUserInfo appends one usersInfo entry as key.
func appendUserInfo(dst []byte, key string, u *auth.User, showCredentials, showCustomData bool) []byte {
	idx, dst := bsoncore.AppendDocumentElementStart(dst, key)
	stored := auth.EncodeUser(u)
	for _, f := range []string{"_id", "userId", "user", "db"} {
		dst = bsoncore.AppendValueElement(dst, f, stored.Lookup(f))
	}
	if showCredentials {
		dst = bsoncore.AppendValueElement(dst, "credentials", stored.Lookup("credentials"))
	}
	dst = auth.AppendRoleNames(dst, "roles", u.Roles)
	if showCustomData && u.CustomData != nil {
		dst = bsoncore.AppendDocumentElement(dst, "customData", u.CustomData)
	}
	var mechs []string
	for _, m := range u.Mechanisms() {
		mechs = append(mechs, string(m))
	}
	dst = bsonx.AppendStringArray(dst, "mechanisms", mechs)
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

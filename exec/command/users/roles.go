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

// addRoleCommands registers the role commands: custom roles with privileges and inherited
// roles (roles_update.go: the commands that change them).
func (h *Handlers) addRoleCommands(add func(*command.Command)) {
	h.addRoleUpdateCommands(add)
	ua := auth.ActionUserAdmin
	add(&command.Command{Name: "createRole", Run: h.createRole, Action: ua, Needs: roleGrantNeeds, Help: "Adds a role to the system", Props: command.APIV1})
	add(&command.Command{Name: "dropRole", Run: h.dropRole, Action: ua, Help: "Drops a single role.", Props: command.APIV1})
	add(&command.Command{Name: "rolesInfo", Run: h.rolesInfo, Action: ua, Needs: h.rolesInfoNeeds, Help: "Returns information about roles."})
}

// createRole adds a custom role to r.DB.
func (h *Handlers) createRole(_ context.Context, r *command.Request) error {
	first, _ := bsonx.FirstElement(r.Body)
	name, err := args.String(r.Name, r.Name, first.Value())
	if err != nil {
		return err
	}
	role := &auth.Role{Name: auth.RoleName{Role: name, DB: r.DB}}
	var privSet, rolesSet bool
	err = args.ForEach(r.Name, r.Body, func(key string, v bsoncore.Value) (bool, error) {
		var err error
		switch key {
		case "privileges":
			privSet = true
			if role.Privileges, err = auth.DecodePrivileges(v); err != nil {
				err = mongoerr.New(mongoerr.BadValue, "%s", err.Error())
			}
			// MongoDB keeps one privilege per resource and a set of roles.
			role.Privileges = auth.MergePrivileges(role.Privileges)
		case "roles":
			rolesSet = true
			role.Roles, err = parseRoleNames(r.Name, key, v, r.DB)
			role.Roles = uniqueRoles(role.Roles)
		case "authenticationRestrictions":
			err = mongoerr.New(mongoerr.NotImplemented, "authenticationRestrictions are not supported")
		default:
			return false, nil
		}
		return true, err
	})
	switch {
	case err != nil:
		return err
	case !privSet:
		return args.Missing(r.Name, "privileges")
	case !rolesSet:
		return args.Missing(r.Name, "roles")
	}
	if err := checkNewRoleName(role.Name); err != nil {
		return err
	}
	return h.Access.Change(func(reg *auth.Registry) (puts, dels []store.SecurityRecord, err error) {
		// MongoDB's order: the roles granted, the privileges, then the insert's duplicate.
		if err := checkGrantRoles(reg, role.Name, role.Roles); err != nil {
			return nil, nil, err
		}
		if err := checkGrantPrivileges(role.Name, role.Privileges); err != nil {
			return nil, nil, err
		}
		if reg.Role(role.Name) != nil {
			return nil, nil, mongoerr.New(mongoerr.Location51002, "Role \"%s\" already exists", role.Name)
		}
		return []store.SecurityRecord{access.RoleRecord(role)}, nil, nil
	})
}

// checkNewRoleName refuses the names createRole does not create, in MongoDB's order.
func checkNewRoleName(rn auth.RoleName) error {
	switch {
	case rn.Role == "":
		return mongoerr.New(mongoerr.BadValue, "Role name must be non-empty")
	case rn.DB == "local":
		return mongoerr.New(mongoerr.BadValue, "Cannot create roles in the local database")
	case rn.DB == "$external":
		return mongoerr.New(mongoerr.BadValue, "Cannot create roles in the $external database")
	case auth.IsBuiltin(rn):
		return mongoerr.New(mongoerr.BadValue, "Cannot create roles with the same name as a built-in role")
	}
	return nil
}

// checkGrantRoles refuses to grant roles toAdd to role as MongoDB's
// checkOkayToGrantRolesToRole does: not itself, only roles of its own database (unless it is
// an admin role), only roles that exist, and no cycle.
func checkGrantRoles(reg *auth.Registry, role auth.RoleName, toAdd []auth.RoleName) error {
	for _, add := range toAdd {
		if add == role {
			return mongoerr.New(mongoerr.InvalidRoleModification, "Cannot grant role %s to itself.", role)
		}
		if role.DB != "admin" && add.DB != role.DB {
			return mongoerr.New(mongoerr.InvalidRoleModification, "Roles on the '%s' database cannot be granted roles from other databases", role.DB)
		}
	}
	if err := checkRolesExist(reg, toAdd); err != nil {
		me := mongoerr.As(err)
		return mongoerr.New(me.Code, "Cannot grant roles to '%s': %s", role, me.Message)
	}
	if slices.Contains(reg.Inherited(toAdd), role) {
		return mongoerr.New(mongoerr.InvalidRoleModification, "Granting roles to %s would introduce a cycle in the role graph", role)
	}
	return nil
}

// checkGrantPrivileges refuses, as MongoDB's checkOkayToGrantPrivilegesToRole does, the
// privileges a role of a database other than admin cannot hold: any that targets another
// database, every database, a collection of every database, or the cluster.
func checkGrantPrivileges(role auth.RoleName, privileges []auth.Privilege) error {
	if role.DB == "admin" {
		return nil
	}
	for _, p := range privileges {
		if p.Cluster || p.AnyResource || p.DB != role.DB {
			return mongoerr.New(mongoerr.InvalidRoleModification, "Roles on the '%s' database cannot be granted privileges that target other databases or the cluster", role.DB)
		}
	}
	return nil
}

// dropRole removes a custom role; users and roles that held it lose it.
func (h *Handlers) dropRole(_ context.Context, r *command.Request) error {
	first, _ := bsonx.FirstElement(r.Body)
	name, err := args.String(r.Name, r.Name, first.Value())
	if err != nil {
		return err
	}
	rn := auth.RoleName{Role: name, DB: r.DB}
	if auth.IsBuiltin(rn) {
		return mongoerr.New(mongoerr.BadValue, "%s is a built-in role and cannot be modified", rn)
	}
	return h.Access.Change(func(reg *auth.Registry) (puts, dels []store.SecurityRecord, err error) {
		if reg.Role(rn) == nil {
			return nil, nil, mongoerr.New(mongoerr.RoleNotFound, "Could not find role: %s", rn)
		}
		// As MongoDB does, remove the role from every user and role that names it.
		for _, u := range reg.Users("") {
			if slices.Contains(u.Roles, rn) {
				c := *u
				c.Roles = slices.DeleteFunc(slices.Clone(u.Roles), func(x auth.RoleName) bool { return x == rn })
				puts = append(puts, access.UserRecord(&c))
			}
		}
		for _, other := range reg.AllRoles() {
			role := reg.Role(other)
			if slices.Contains(role.Roles, rn) {
				c := *role
				c.Roles = slices.DeleteFunc(slices.Clone(role.Roles), func(x auth.RoleName) bool { return x == rn })
				puts = append(puts, access.RoleRecord(&c))
			}
		}
		return puts, []store.SecurityRecord{{Kind: access.RecordRole, DB: rn.DB, Name: rn.Role}}, nil
	})
}

// rolesInfoArg reads rolesInfo's argument: 1 (the roles of the database), "name",
// {role, db}, or an array of those.
func rolesInfoArg(r *command.Request) (names []auth.RoleName, err error) {
	first, _ := bsonx.FirstElement(r.Body)
	v := first.Value()
	switch v.Type {
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble:
		return nil, nil
	case bsoncore.TypeArray:
		return parseRoleNames(r.Name, r.Name, v, r.DB)
	}
	arr := bsoncore.NewArrayBuilder().AppendValue(v).Build()
	return parseRoleNames(r.Name, r.Name, bsoncore.Value{Type: bsoncore.TypeArray, Data: arr}, r.DB)
}

// rolesInfoNeeds lets a user look at the roles it holds; other roles need userAdmin.
func (h *Handlers) rolesInfoNeeds(r *command.Request, def auth.Need) []auth.Need {
	names, err := rolesInfoArg(r)
	if err != nil || len(names) == 0 {
		return []auth.Need{def}
	}
	reg := h.Access.Registry()
	var held []auth.RoleName
	for _, un := range r.Conn.Authn.Users {
		if u := reg.User(un); u != nil {
			held = append(held, reg.Inherited(u.Roles)...)
		}
	}
	for _, n := range names {
		if !slices.Contains(held, n) {
			return []auth.Need{def}
		}
	}
	return []auth.Need{{Action: auth.ActionAuthenticated}}
}

// rolesInfo describes roles: {role, db, isBuiltin, roles, inheritedRoles} and, with
// showPrivileges, privileges and inheritedPrivileges.
func (h *Handlers) rolesInfo(_ context.Context, r *command.Request) error {
	names, err := rolesInfoArg(r)
	if err != nil {
		return err
	}
	var showPrivileges, showBuiltin bool
	err = args.ForEach(r.Name, r.Body, func(key string, v bsoncore.Value) (bool, error) {
		var err error
		switch key {
		case "showPrivileges":
			if v.Type == bsoncore.TypeString { // "asUserFragment"
				return true, mongoerr.New(mongoerr.NotImplemented, "showPrivileges: \"asUserFragment\" is not supported")
			}
			showPrivileges, err = args.Bool(r.Name, key, v)
		case "showBuiltinRoles":
			showBuiltin, err = args.Bool(r.Name, key, v)
		case "showAuthenticationRestrictions":
		default:
			return false, nil
		}
		return true, err
	})
	if err != nil {
		return err
	}
	reg := h.Access.Registry()
	if names == nil {
		if showBuiltin {
			names = auth.BuiltinRoles(r.DB)
		}
		for _, role := range reg.Roles(r.DB) {
			names = append(names, role.Name)
		}
	}
	idx, out := bsoncore.AppendArrayElementStart(r.Out, "roles")
	i := 0
	for _, n := range names {
		if !reg.RoleExists(n) {
			continue // MongoDB leaves unknown roles out
		}
		out = appendRoleInfo(out, bsonx.ArrayKey(i), reg, n, showPrivileges)
		i++
	}
	out, _ = bsoncore.AppendArrayEnd(out, idx)
	r.Out = out
	return nil
}

// appendRoleInfo appends one rolesInfo entry as key.
func appendRoleInfo(dst []byte, key string, reg *auth.Registry, n auth.RoleName, showPrivileges bool) []byte {
	idx, dst := bsoncore.AppendDocumentElementStart(dst, key)
	builtin := auth.IsBuiltin(n)
	var direct []auth.RoleName
	var privileges []auth.Privilege
	if builtin {
		privileges = auth.BuiltinPrivileges(n)
	} else {
		role := reg.Role(n)
		direct, privileges = role.Roles, role.Privileges
		dst = bsoncore.AppendStringElement(dst, "_id", n.DB+"."+n.Role)
	}
	dst = bsoncore.AppendStringElement(dst, "role", n.Role)
	dst = bsoncore.AppendStringElement(dst, "db", n.DB)
	dst = bsoncore.AppendBooleanElement(dst, "isBuiltin", builtin)
	dst = auth.AppendRoleNames(dst, "roles", direct)
	inherited := reg.Inherited(direct)
	dst = auth.AppendRoleNames(dst, "inheritedRoles", inherited)
	if showPrivileges {
		dst = auth.AppendPrivileges(dst, "privileges", privileges)
		all := slices.Clone(privileges)
		for _, in := range inherited {
			if auth.IsBuiltin(in) {
				all = append(all, auth.BuiltinPrivileges(in)...)
			} else {
				all = append(all, reg.Role(in).Privileges...)
			}
		}
		dst = auth.AppendPrivileges(dst, "inheritedPrivileges", all)
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

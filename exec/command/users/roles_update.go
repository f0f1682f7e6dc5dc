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

// The commands that change a custom role check in MongoDB's order
// (user_management_commands.cpp): the arguments (a missing field, a wrong type, an unknown
// action), then an empty array, then a built-in role, then what is granted (the roles: not
// the role itself, of its database unless it is an admin role, existing, no cycle; the
// privileges: of its database unless it is an admin role), and last whether the role
// exists. The change is one catalog write under the users-and-roles mutex; every
// connection's next command is authorized against it, on every node of a cluster once the
// shared catalog reaches it.

// addRoleUpdateCommands registers the commands that change or drop existing roles.
func (h *Handlers) addRoleUpdateCommands(add func(*command.Command)) {
	ua := auth.ActionUserAdmin
	add(&command.Command{Name: "updateRole", Run: h.updateRole, Action: ua, Needs: roleGrantNeeds, Help: "Used to update a role", Props: command.APIV1})
	add(&command.Command{Name: "grantRolesToRole", Run: h.grantRolesToRole, Action: ua, Needs: roleGrantNeeds, Help: "Grants roles to another role.", Props: command.APIV1})
	add(&command.Command{Name: "revokeRolesFromRole", Run: h.revokeRolesFromRole, Action: ua, Needs: roleGrantNeeds, Help: "Revokes roles from another role.", Props: command.APIV1})
	add(&command.Command{Name: "grantPrivilegesToRole", Run: h.grantPrivilegesToRole, Action: ua, Help: "Grants privileges to a role", Props: command.APIV1})
	add(&command.Command{Name: "revokePrivilegesFromRole", Run: h.revokePrivilegesFromRole, Action: ua, Help: "Revokes privileges from a role", Props: command.APIV1})
	add(&command.Command{Name: "dropAllRolesFromDatabase", Run: h.dropAllRolesFromDatabase, Action: ua, Help: "Drops all roles from the given database."})
}

// roleSpec is what the role commands read: the role they change and the fields they set.
type roleSpec struct {
	name       auth.RoleName
	roles      []auth.RoleName
	rolesSet   bool
	privileges []auth.Privilege
	privSet    bool
}

// parseRoleSpec reads {<cmd>: "name", roles?, privileges?}; fields, the ones the command
// takes (authenticationRestrictions is refused as createRole refuses it).
func parseRoleSpec(r *command.Request, fields ...string) (*roleSpec, error) {
	first, _ := bsonx.FirstElement(r.Body)
	name, err := args.String(r.Name, r.Name, first.Value())
	if err != nil {
		return nil, err
	}
	s := &roleSpec{name: auth.RoleName{Role: name, DB: r.DB}}
	err = args.ForEach(r.Name, r.Body, func(key string, v bsoncore.Value) (bool, error) {
		if !slices.Contains(fields, key) {
			return false, nil
		}
		var err error
		switch key {
		case "roles":
			s.rolesSet = true
			s.roles, err = parseRoleNames(r.Name, key, v, r.DB)
			s.roles = uniqueRoles(s.roles)
		case "privileges":
			s.privSet = true
			if s.privileges, err = auth.DecodePrivileges(v); err != nil {
				err = mongoerr.New(mongoerr.BadValue, "%s", err.Error())
			}
			s.privileges = auth.MergePrivileges(s.privileges)
		case "authenticationRestrictions":
			err = mongoerr.New(mongoerr.NotImplemented, "authenticationRestrictions are not supported")
		}
		return true, err
	})
	return s, err
}

// uniqueRoles returns roles without repeats, in their first order (MongoDB keeps a set).
func uniqueRoles(roles []auth.RoleName) []auth.RoleName {
	out := roles[:0:0]
	for _, r := range roles {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// errRoleNotUpdated is updateRoleDocument's RoleNotFound for rn.
func errRoleNotUpdated(rn auth.RoleName) error {
	return mongoerr.New(mongoerr.RoleNotFound, "Role %s not found", rn)
}

// errBuiltinRole refuses to change built-in role rn.
func errBuiltinRole(rn auth.RoleName) error {
	return mongoerr.New(mongoerr.BadValue, "%s is a built-in role and cannot be modified", rn)
}

// changeRole applies fn to a copy of custom role rn after check (nil: none) has passed, and
// stores it; a role that does not exist fails with errRoleNotUpdated.
func (h *Handlers) changeRole(rn auth.RoleName, check func(*auth.Registry) error, fn func(*auth.Role)) error {
	return h.Access.Change(func(reg *auth.Registry) (puts, dels []store.SecurityRecord, err error) {
		if check != nil {
			if err := check(reg); err != nil {
				return nil, nil, err
			}
		}
		old := reg.Role(rn)
		if old == nil {
			return nil, nil, errRoleNotUpdated(rn)
		}
		role := *old
		role.Roles, role.Privileges = slices.Clone(old.Roles), slices.Clone(old.Privileges)
		fn(&role)
		return []store.SecurityRecord{access.RoleRecord(&role)}, nil, nil
	})
}

// updateRole replaces a role's roles and/or privileges.
func (h *Handlers) updateRole(_ context.Context, r *command.Request) error {
	s, err := parseRoleSpec(r, "roles", "privileges", "authenticationRestrictions")
	if err != nil {
		return err
	}
	if !s.rolesSet && !s.privSet {
		return mongoerr.New(mongoerr.BadValue, "Must specify at least one field to update in updateRole")
	}
	check := func(reg *auth.Registry) error {
		if err := checkRolesExist(reg, []auth.RoleName{s.name}); err != nil {
			return err
		}
		if s.rolesSet {
			if err := checkGrantRoles(reg, s.name, s.roles); err != nil {
				return err
			}
		}
		return checkGrantPrivileges(s.name, s.privileges)
	}
	return h.changeRole(s.name, check, func(role *auth.Role) {
		if s.rolesSet {
			role.Roles = s.roles
		}
		if s.privSet {
			role.Privileges = s.privileges
		}
	})
}

// parseNonEmpty reads the role and field (roles or privileges) of a grant or revoke: the
// field is required and must not be empty, and the role must not be built in.
func parseNonEmpty(r *command.Request, field string) (*roleSpec, error) {
	s, err := parseRoleSpec(r, field)
	if err != nil {
		return nil, err
	}
	set, n := s.rolesSet, len(s.roles)
	if field == "privileges" {
		set, n = s.privSet, len(s.privileges)
	}
	switch {
	case !set:
		return nil, args.Missing(r.Name, field)
	case n == 0:
		return nil, mongoerr.New(mongoerr.BadValue, "%s command requires a non-empty \"%s\" array", r.Name, field)
	case auth.IsBuiltin(s.name):
		return nil, errBuiltinRole(s.name)
	}
	return s, nil
}

// grantRolesToRole adds roles to a role's roles.
func (h *Handlers) grantRolesToRole(_ context.Context, r *command.Request) error {
	s, err := parseNonEmpty(r, "roles")
	if err != nil {
		return err
	}
	check := func(reg *auth.Registry) error { return checkGrantRoles(reg, s.name, s.roles) }
	return h.changeRole(s.name, check, func(role *auth.Role) {
		role.Roles = uniqueRoles(append(role.Roles, s.roles...))
	})
}

// revokeRolesFromRole removes roles from a role's roles; roles it does not hold are ignored.
func (h *Handlers) revokeRolesFromRole(_ context.Context, r *command.Request) error {
	s, err := parseNonEmpty(r, "roles")
	if err != nil {
		return err
	}
	return h.changeRole(s.name, nil, func(role *auth.Role) {
		role.Roles = slices.DeleteFunc(role.Roles, func(x auth.RoleName) bool { return slices.Contains(s.roles, x) })
	})
}

// grantPrivilegesToRole adds privileges to a role's, merged by resource.
func (h *Handlers) grantPrivilegesToRole(_ context.Context, r *command.Request) error {
	s, err := parseNonEmpty(r, "privileges")
	if err != nil {
		return err
	}
	if err := checkGrantPrivileges(s.name, s.privileges); err != nil {
		return err
	}
	return h.changeRole(s.name, nil, func(role *auth.Role) {
		role.Privileges = auth.MergePrivileges(append(role.Privileges, s.privileges...))
	})
}

// revokePrivilegesFromRole removes actions from a role's privileges; what it does not hold
// is ignored.
func (h *Handlers) revokePrivilegesFromRole(_ context.Context, r *command.Request) error {
	s, err := parseNonEmpty(r, "privileges")
	if err != nil {
		return err
	}
	return h.changeRole(s.name, nil, func(role *auth.Role) {
		role.Privileges = auth.RevokePrivileges(role.Privileges, s.privileges)
	})
}

// dropAllRolesFromDatabase drops every custom role of r.DB, first taking them from the
// users and roles that hold them, and reports how many it dropped. NB: the built-in roles
// of r.DB that users and roles hold stay, as dropRole leaves them.
func (h *Handlers) dropAllRolesFromDatabase(_ context.Context, r *command.Request) error {
	var n int
	err := h.Access.Change(func(reg *auth.Registry) (puts, dels []store.SecurityRecord, err error) {
		ofDB := func(x auth.RoleName) bool { return x.DB == r.DB && !auth.IsBuiltin(x) }
		for _, u := range reg.Users("") {
			if slices.ContainsFunc(u.Roles, ofDB) {
				c := *u
				c.Roles = slices.DeleteFunc(slices.Clone(u.Roles), ofDB)
				puts = append(puts, access.UserRecord(&c))
			}
		}
		for _, rn := range reg.AllRoles() {
			role := reg.Role(rn)
			if rn.DB == r.DB {
				dels = append(dels, store.SecurityRecord{Kind: access.RecordRole, DB: rn.DB, Name: rn.Role})
				continue
			}
			if slices.ContainsFunc(role.Roles, ofDB) {
				c := *role
				c.Roles = slices.DeleteFunc(slices.Clone(role.Roles), ofDB)
				puts = append(puts, access.RoleRecord(&c))
			}
		}
		n = len(dels)
		return puts, dels, nil
	})
	if err != nil {
		return err
	}
	r.Out = bsoncore.AppendInt32Element(r.Out, "n", int32(n))
	return nil
}

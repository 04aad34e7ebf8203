package auth

// This file is the auth package's contract, written first so that the API and the pages can be
// built against it at the same time. The owner replaces it with the real code.

// Roles.
const (
	RoleViewer   = "viewer"
	RoleOperator = "operator"
)

// Identity is who made a request. Kind is "token", "proxy" or "none" (auth off: a local operator).
type Identity struct {
	Name string
	Kind string
	Role string
}

// CanAct reports whether the identity may start and cancel redrives.
func (i Identity) CanAct() bool { return i.Role == RoleOperator }

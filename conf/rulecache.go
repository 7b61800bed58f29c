package conf

import "github.com/edgeway/edgeway/routes/rule"

// rules is the rule cache every load shares: a reload parses and compiles
// only the match expressions that are new since the last load or the one
// before it (rule.Cache). It is the one piece of state conf keeps between
// loads; it changes how fast a load is, never what it returns.
var rules rule.Cache

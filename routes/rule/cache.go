package rule

import (
	"strings"
	"sync"
)

// Cache keeps parsed rules, and the regexps compiled for them, from one
// load of a configuration to the next, so that a reload parses only the
// rules that changed: a 10,000-route file that changes one route reparses
// one rule. Reuse is safe because a Rule is immutable. Entries not used in
// the last two generations are dropped by Sweep, so the cache holds at most
// the rules of the live configuration and of the one loaded before it.
//
// The zero value is ready to use; a Cache is safe for concurrent use.
// Loads that run at the same time share it; a Sweep between them only
// costs the other load some reparsing.
type Cache struct {
	mu    sync.Mutex
	gen   uint64
	rules map[cacheKey]*cached[*Rule]
	res   map[string]*cached[*matchRE]
}

type cacheKey struct {
	kind Kind
	text string
}

type cached[T any] struct {
	v    T
	used uint64 // the last generation that asked for it
}

// Parse is the package's Parse through the cache. Only rules that parse
// are kept.
func (c *Cache) Parse(kind Kind, text string) (*Rule, error) {
	k := cacheKey{kind, text}
	c.mu.Lock()
	if e := c.rules[k]; e != nil {
		e.used = c.gen
		c.mu.Unlock()
		return e.v, nil
	}
	c.mu.Unlock()
	// The key and the rule's text are copied: text is usually a slice of
	// a whole configuration file, which the cache must not keep alive.
	k.text = strings.Clone(text)
	r, err := parse(kind, k.text, c)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rules == nil {
		c.rules = map[cacheKey]*cached[*Rule]{}
	}
	c.rules[k] = &cached[*Rule]{v: r, used: c.gen}
	return r, nil
}

// Sweep ends a generation (one load of a configuration): it drops what the
// generation and the one before it did not use.
func (c *Cache) Sweep() {
	c.mu.Lock()
	defer c.mu.Unlock()
	keep := c.gen // used in this generation or the one before
	if keep > 0 {
		keep--
	}
	for k, e := range c.rules {
		if e.used < keep {
			delete(c.rules, k)
		}
	}
	for k, e := range c.res {
		if e.used < keep {
			delete(c.res, k)
		}
	}
	c.gen++
}

// Len returns the number of rules cached.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.rules)
}

// regexp returns the compiled form of pattern, compiling it on a miss.
// Regexps are immutable once compiled, so rules may share one.
func (c *Cache) regexp(name string, a arg) (*matchRE, *Error) {
	c.mu.Lock()
	if e := c.res[a.val]; e != nil {
		e.used = c.gen
		c.mu.Unlock()
		return e.v, nil
	}
	c.mu.Unlock()
	m, err := newMatchRE(name, a)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.res == nil {
		c.res = map[string]*cached[*matchRE]{}
	}
	c.res[strings.Clone(a.val)] = &cached[*matchRE]{v: m, used: c.gen}
	return m, nil
}

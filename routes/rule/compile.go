package rule

// compileHTTP turns a parsed tree into one closure; evaluation is plain
// short-circuit boolean logic (§1.5).
func compileHTTP(n *node) httpFn {
	switch n.op {
	case opAnd:
		l, r := compileHTTP(n.left), compileHTTP(n.right)
		return func(q *HTTPRequest) bool { return l(q) && r(q) }
	case opOr:
		l, r := compileHTTP(n.left), compileHTTP(n.right)
		return func(q *HTTPRequest) bool { return l(q) || r(q) }
	}
	f := n.leaf.http
	if n.leaf.not {
		return func(q *HTTPRequest) bool { return !f(q) }
	}
	return f
}

// compileTCP is compileHTTP for TCP rules.
func compileTCP(n *node) tcpFn {
	switch n.op {
	case opAnd:
		l, r := compileTCP(n.left), compileTCP(n.right)
		return func(c *TCPHello) bool { return l(c) && r(c) }
	case opOr:
		l, r := compileTCP(n.left), compileTCP(n.right)
		return func(c *TCPHello) bool { return l(c) || r(c) }
	}
	f := n.leaf.tcp
	if n.leaf.not {
		return func(c *TCPHello) bool { return !f(c) }
	}
	return f
}

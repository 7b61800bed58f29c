package rule

import "strings"

// trieNode is a node of a radix tree of path keys. The path of a node is
// the concatenation of the labels from the root.
type trieNode struct {
	label    string
	first    string // first byte of each child's label, in children order
	children []*trieNode
	prefix   []int32 // ranks of routes keyed PathPrefix(path of node)
	exact    []int32 // ranks of routes keyed Path(path of node)
}

// insert returns the node for key below n, splitting edges as needed.
func (n *trieNode) insert(key string) *trieNode {
	for key != "" {
		i := strings.IndexByte(n.first, key[0])
		if i < 0 {
			c := &trieNode{label: key}
			n.first += key[:1]
			n.children = append(n.children, c)
			return c
		}
		c := n.children[i]
		common := commonPrefix(c.label, key)
		if common < len(c.label) {
			mid := &trieNode{label: c.label[:common], first: c.label[common : common+1], children: []*trieNode{c}}
			c.label = c.label[common:]
			n.children[i] = mid
			c = mid
		}
		n, key = c, key[common:]
	}
	return n
}

// find returns the node whose path is key, or nil.
func (n *trieNode) find(key string) *trieNode {
	for ok := true; key != "" && ok; {
		n, key, ok = n.next(key)
	}
	return n
}

// next returns the child of n whose label starts path (not empty) and the
// rest of path after it; ok is false when there is none.
func (n *trieNode) next(path string) (c *trieNode, rest string, ok bool) {
	i := strings.IndexByte(n.first, path[0])
	if i < 0 {
		return nil, "", false
	}
	c = n.children[i]
	if !strings.HasPrefix(path, c.label) {
		return nil, "", false
	}
	return c, path[len(c.label):], true
}

func commonPrefix(a, b string) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

// collect appends the prefix lists of every node whose path is a prefix of
// path, and the exact list of the node whose path is path.
func (n *trieNode) collect(path string, out [][]int32) [][]int32 {
	for {
		if len(n.prefix) > 0 {
			out = append(out, n.prefix)
		}
		if path == "" {
			if len(n.exact) > 0 {
				out = append(out, n.exact)
			}
			return out
		}
		var ok bool
		if n, path, ok = n.next(path); !ok {
			return out
		}
	}
}

package search

import "fmt"

// Terms returns the words that x's bleve index holds in its dictionary of
// text, as its files give them: those of removed documents included,
// until the index is compacted.
func Terms(x *Index) ([]string, error) {
	b, ok := x.b.(*bleveBackend)
	if !ok {
		return nil, fmt.Errorf("the index is a %T, not bleve", x.b)
	}
	dict, err := b.idx.FieldDict(fieldText)
	if err != nil {
		return nil, err
	}
	defer dict.Close()
	var terms []string
	for {
		e, err := dict.Next()
		if err != nil || e == nil {
			return terms, err
		}
		terms = append(terms, e.Term)
	}
}

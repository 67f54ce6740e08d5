package web

import (
	"html/template"
	"net/url"
)

// pages are the templates besides the layout, one per page.
var pages = []string{"sessions", "session", "agents", "agent", "audit", "events", "hooks", "search", "error"}

// templates holds each page's template, the layout included.
var templates = parseTemplates()

// parseTemplates parses the layout and each page; the embedded files
// always parse, so an error is a bug.
func parseTemplates() map[string]*template.Template {
	funcs := template.FuncMap{
		"count":     count,
		"path":      url.PathEscape,
		"shortTime": shortTime,
		"query":     url.QueryEscape,
	}
	layout := template.Must(template.New("layout").Funcs(funcs).ParseFS(templateFiles, "templates/layout.html"))
	out := map[string]*template.Template{}
	for _, name := range pages {
		out[name] = template.Must(template.Must(layout.Clone()).ParseFS(templateFiles, "templates/"+name+".html"))
	}
	return out
}

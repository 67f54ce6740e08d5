// Package browsertest drives the web view in a headless Chromium: each
// page on a store the demo made, its console, the agent timeline, a live
// append, and screenshots at a desktop and a phone width. It is a module
// of its own, so that the browser driver stays out of reprise's.
package browsertest

module github.com/reprise-dev/reprise/adapters/openai

go 1.26.8

require (
	github.com/openai/openai-go/v3 v3.98.0
	github.com/reprise-dev/reprise v0.0.0
)

require (
	github.com/coder/websocket v1.8.15 // indirect
	github.com/looplab/fsm v1.0.3 // indirect
	github.com/tidwall/gjson v1.20.0 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/pretty v1.2.1 // indirect
	github.com/tidwall/sjson v1.2.5 // indirect
	github.com/vmihailenco/msgpack/v5 v5.4.1 // indirect
	github.com/vmihailenco/tagparser/v2 v2.0.0 // indirect
	go.etcd.io/bbolt v1.5.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)

replace github.com/reprise-dev/reprise => ../..

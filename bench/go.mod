module github.com/idgen/idgen/bench

go 1.26.0

require (
	github.com/bwmarrin/snowflake v0.3.0
	github.com/gofrs/uuid/v5 v5.4.0
	github.com/idgen/idgen/libs/idcore v0.1.0
)

require (
	connectrpc.com/connect v1.21.1
	github.com/google/uuid v1.6.0
	google.golang.org/grpc v1.85.0
)

require (
	connectrpc.com/cors v0.1.0 // indirect
	connectrpc.com/grpchealth v1.5.0 // indirect
	connectrpc.com/grpcreflect v1.3.1 // indirect
	github.com/fsnotify/fsnotify v1.10.1 // indirect
	github.com/go-json-experiment/json v1.27.2 // indirect
	github.com/labstack/echo/v4 v4.16.4 // indirect
	github.com/labstack/gommon v0.5.0 // indirect
	github.com/mattn/go-colorable v0.1.15 // indirect
	github.com/mattn/go-isatty v0.0.24 // indirect
	github.com/rs/cors v1.11.1 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
	github.com/valyala/fasttemplate v1.2.2 // indirect
	golang.org/x/crypto v0.57.0 // indirect
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1 // indirect
)

require (
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/idgen/idgen/libs/api v0.1.0
	github.com/idgen/idgen/libs/idclient v0.1.0
	github.com/idgen/idgen/libs/svc v0.1.0
	github.com/idgen/idgen/libs/uuidv7 v0.1.0
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/prometheus/client_golang v1.25.0 // indirect
	github.com/prometheus/client_model v0.6.3 // indirect
	github.com/prometheus/common v0.72.0 // indirect
	github.com/prometheus/procfs v0.22.0 // indirect
	github.com/sony/sonyflake/v2 v2.2.0
	golang.org/x/sys v0.50.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

replace github.com/idgen/idgen/libs/idcore => ../libs/idcore

replace github.com/idgen/idgen/libs/testenv => ../libs/testenv

replace github.com/idgen/idgen/libs/uuidv7 => ../libs/uuidv7

replace github.com/idgen/idgen/libs/api => ../libs/api

replace github.com/idgen/idgen/libs/idclient => ../libs/idclient

replace github.com/idgen/idgen/libs/svc => ../libs/svc

replace github.com/idgen/idgen/libs/conn => ../libs/conn

replace github.com/idgen/idgen/libs/localstack => ../libs/localstack

module github.com/idgen/idgen/tools/gameday

go 1.26.0

replace github.com/idgen/idgen/libs/idclient => ../../libs/idclient

replace github.com/idgen/idgen/libs/topology => ../../libs/topology

replace github.com/idgen/idgen/libs/api => ../../libs/api

replace github.com/idgen/idgen/libs/idcore => ../../libs/idcore

replace github.com/idgen/idgen/libs/testenv => ../../libs/testenv

replace github.com/idgen/idgen/libs/conn => ../../libs/conn

replace github.com/idgen/idgen/libs/svc => ../../libs/svc

replace github.com/idgen/idgen/dashboards => ../../dashboards

replace github.com/idgen/idgen/services/registry => ../../services/registry

replace github.com/idgen/idgen/services/generator => ../../services/generator

replace github.com/idgen/idgen/services/public-id => ../../services/public-id

require (
	github.com/idgen/idgen/dashboards v0.0.0-00010101000000-000000000000
	github.com/idgen/idgen/libs/idclient v0.1.0
	github.com/idgen/idgen/libs/idcore v0.1.0
	github.com/idgen/idgen/libs/localstack v0.1.0
	github.com/idgen/idgen/libs/testenv v0.1.0
	github.com/idgen/idgen/libs/topology v0.1.0
	github.com/idgen/idgen/services/public-id v0.0.0-00010101000000-000000000000
	github.com/prometheus/client_golang v1.25.0
)

require (
	connectrpc.com/connect v1.21.1 // indirect
	connectrpc.com/grpchealth v1.5.0 // indirect
	github.com/apparentlymart/go-textseg/v15 v15.0.0 // indirect
	github.com/aws/aws-sdk-go-v2 v1.48.0 // indirect
	github.com/aws/aws-sdk-go-v2/config v1.33.18 // indirect
	github.com/aws/aws-sdk-go-v2/credentials v1.21.0 // indirect
	github.com/aws/aws-sdk-go-v2/feature/ec2/imds v1.20.9 // indirect
	github.com/aws/aws-sdk-go-v2/internal/configsources v1.5.12 // indirect
	github.com/aws/aws-sdk-go-v2/internal/endpoints/v2 v2.8.12 // indirect
	github.com/aws/aws-sdk-go-v2/internal/v4a v1.5.12 // indirect
	github.com/aws/aws-sdk-go-v2/service/dynamodb v1.74.0 // indirect
	github.com/aws/aws-sdk-go-v2/service/internal/accept-encoding v1.13.25 // indirect
	github.com/aws/aws-sdk-go-v2/service/internal/endpoint-discovery v1.13.12 // indirect
	github.com/aws/aws-sdk-go-v2/service/internal/presigned-url v1.14.12 // indirect
	github.com/aws/aws-sdk-go-v2/service/signin v1.13.1 // indirect
	github.com/aws/aws-sdk-go-v2/service/sso v1.39.5 // indirect
	github.com/aws/aws-sdk-go-v2/service/ssooidc v1.44.5 // indirect
	github.com/aws/aws-sdk-go-v2/service/sts v1.52.0 // indirect
	github.com/aws/smithy-go v1.28.9 // indirect
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/fsnotify/fsnotify v1.10.1 // indirect
	github.com/grafana/grafana-foundation-sdk/go v0.0.22 // indirect
	github.com/hashicorp/go-version v1.9.0 // indirect
	github.com/hashicorp/terraform-exec v0.26.0 // indirect
	github.com/hashicorp/terraform-json v0.29.0 // indirect
	github.com/idgen/idgen/libs/api v0.1.0 // indirect
	github.com/idgen/idgen/libs/conn v0.1.0 // indirect
	github.com/idgen/idgen/libs/svc v0.1.0 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/prometheus/client_model v0.6.3 // indirect
	github.com/prometheus/common v0.72.0 // indirect
	github.com/prometheus/procfs v0.22.0 // indirect
	github.com/zclconf/go-cty v1.18.1 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)

replace github.com/idgen/idgen/libs/localstack => ../../libs/localstack

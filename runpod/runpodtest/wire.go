package runpodtest

// The JSON shapes of Runpod's REST v2 API, after the schemas of
// openapi_v2.json. They are the fake's own copies, never the client's, so that
// the two can be checked against each other rather than drift together.

type wirePod struct {
	ID               string            `json:"id"`
	Name             string            `json:"name"`
	Status           string            `json:"status"`
	Actions          []string          `json:"actions"`
	Image            string            `json:"image"`
	Args             string            `json:"args"`
	Entrypoint       []string          `json:"entrypoint"`
	Cmd              []string          `json:"cmd"`
	Disk             int               `json:"disk"`
	Mounts           wireMounts        `json:"mounts"`
	Ports            []string          `json:"ports"`
	Env              map[string]string `json:"env"`
	Registry         *string           `json:"registry"`
	GPU              *wireGPU          `json:"gpu,omitempty"`
	CPU              *wireCPU          `json:"cpu,omitempty"`
	Cloud            string            `json:"cloud"`
	DataCenterID     *string           `json:"dataCenterId"`
	CudaVersion      *string           `json:"cudaVersion"`
	SSH              wireSSH           `json:"ssh"`
	Template         *string           `json:"template"`
	Cost             float64           `json:"cost"`
	Locked           bool              `json:"locked"`
	GlobalNetworking wireGlobalNet     `json:"globalNetworking"`
	Runtime          *wireRuntime      `json:"runtime"`
	CreatedAt        string            `json:"createdAt"`
	StartedAt        *string           `json:"startedAt"`
}

type wireMounts struct {
	Persistent *wirePersistentMount `json:"persistent,omitempty"`
	Network    []wireNetworkMount   `json:"network,omitempty"`
}

type wirePersistentMount struct {
	Size *int   `json:"size"`
	Path string `json:"path"`
}

type wireNetworkMount struct {
	VolumeID string `json:"volumeId"`
	Path     string `json:"path"`
}

type wireGPU struct {
	ID    string `json:"id"`
	Count int    `json:"count"`
	// VCPUCount and Memory (GB of system RAM) are the pod's allocated
	// totals across its GPUs.
	VCPUCount float64 `json:"vcpuCount"`
	Memory    float64 `json:"memory"`
}

type wireCPU struct {
	ID        string `json:"id"`
	VCPUCount int    `json:"vcpuCount"`
	Memory    int    `json:"memory,omitempty"`
}

type wireSSH struct {
	Proxy  *wireSSHEndpoint `json:"proxy"`
	Direct *wireSSHEndpoint `json:"direct"`
}

type wireSSHEndpoint struct {
	Host     string `json:"host"`
	Port     int    `json:"port"`
	Username string `json:"username"`
	Command  string `json:"command"`
}

type wireGlobalNet struct {
	Enabled bool `json:"enabled"`
}

type wireRuntime struct {
	Uptime int64             `json:"uptime"`
	Ports  []wireRuntimePort `json:"ports"`
}

// wireRuntimePort is PodRuntimePort: Public is null for an http port,
// which Runpod's proxy serves rather than a public mapping.
type wireRuntimePort struct {
	Private int    `json:"private"`
	Public  *int   `json:"public"`
	Type    string `json:"type"`
	IP      string `json:"ip"`
}

type wireListPods struct {
	Pods       []wirePod      `json:"pods"`
	Pagination wirePagination `json:"pagination"`
}

// wirePagination is a paged list's cursor: the next page starts after it.
// NextCursor is null on the last page.
type wirePagination struct {
	NextCursor  *string `json:"nextCursor"`
	HasNextPage bool    `json:"hasNextPage"`
}

// wireCreatePod is CreatePodRequest. Decoding rejects unknown fields, as
// the schema's unevaluatedProperties: false does.
type wireCreatePod struct {
	Name             *string           `json:"name"`
	Image            *string           `json:"image"`
	Args             *string           `json:"args"`
	Entrypoint       []string          `json:"entrypoint"`
	Cmd              []string          `json:"cmd"`
	Disk             *int              `json:"disk"`
	Env              map[string]string `json:"env"`
	Ports            []string          `json:"ports"`
	Registry         *string           `json:"registry"`
	Cloud            *string           `json:"cloud"`
	CPU              *wireCreateCPU    `json:"cpu"`
	GPU              *wireCreateGPU    `json:"gpu"`
	DataCenterIDs    []string          `json:"dataCenterIds"`
	GlobalNetworking *bool             `json:"globalNetworking"`
	Mounts           *wireMounts       `json:"mounts"`
	StartJupyter     *bool             `json:"startJupyter"`
	StartSSH         *bool             `json:"startSsh"`
	TemplateID       *string           `json:"templateId"`
}

type wireCreateGPU struct {
	ID                  string   `json:"id"`
	Count               *int     `json:"count"`
	AllowedCudaVersions []string `json:"allowedCudaVersions"`
	MinCudaVersion      *string  `json:"minCudaVersion"`
}

type wireCreateCPU struct {
	ID        string `json:"id"`
	VCPUCount int    `json:"vcpuCount"`
}

type wirePodAction struct {
	Action *string `json:"action"`
}

type wireNetworkVolume struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	Size       int    `json:"size"`
	DataCenter string `json:"dataCenter"`
	Type       string `json:"type"`
}

type wireUpdateNetworkVolume struct {
	Name *string `json:"name"`
	Size *int    `json:"size"`
}

type wireGPUType struct {
	ID           string        `json:"id"`
	Name         string        `json:"name"`
	Pool         *string       `json:"pool"`
	Manufacturer string        `json:"manufacturer"`
	Memory       int           `json:"memory"`
	Secure       bool          `json:"secure"`
	Community    bool          `json:"community"`
	Price        wireGPUPrice  `json:"price"`
	MaxCount     wireGPUCounts `json:"maxCount"`
	Availability *string       `json:"availability,omitempty"`
	DataCenters  []wireDCStock `json:"dataCenters,omitempty"`
}

type wireGPUPrice struct {
	Secure    float64 `json:"secure"`
	Community float64 `json:"community"`
}

type wireGPUCounts struct {
	Secure    int `json:"secure"`
	Community int `json:"community"`
}

type wireListGPUTypes struct {
	GPUs []wireGPUType `json:"gpus"`
}

// wireProblem is ErrorResponse, an RFC 9457 problem object.
type wireProblem struct {
	Title  string   `json:"title"`
	Status int      `json:"status"`
	Detail string   `json:"detail"`
	Errors []string `json:"errors,omitempty"`
}

type wireDCStock struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	Availability string `json:"availability"`
}

type wireDataCenter struct {
	ID                 string        `json:"id"`
	Name               string        `json:"name"`
	Region             string        `json:"region"`
	GlobalNetwork      bool          `json:"globalNetwork"`
	NetworkVolumeTypes []string      `json:"networkVolumeTypes"`
	Compliance         []string      `json:"compliance"`
	GPUAvailability    []wireDCStock `json:"gpuAvailability,omitempty"`
	CPUAvailability    []wireDCStock `json:"cpuAvailability,omitempty"`
}

type wireCPUType struct {
	ID           string        `json:"id"`
	Name         string        `json:"name"`
	Group        string        `json:"group"`
	VCPU         wireVCPURange `json:"vcpu"`
	RAMPerVCPU   float64       `json:"ramGbPerVcpu"`
	Price        wireCPUPrice  `json:"price"`
	Availability *string       `json:"availability,omitempty"`
	DataCenters  []wireDCStock `json:"dataCenters,omitempty"`
}

type wireVCPURange struct {
	Min int `json:"min"`
	Max int `json:"max"`
}

type wireCPUPrice struct {
	SecurePerVCPU     float64 `json:"securePerVcpu"`
	ServerlessPerVCPU float64 `json:"serverlessPerVcpu"`
}

type wireListCPUTypes struct {
	CPUs []wireCPUType `json:"cpus"`
}

type wireListDataCenters struct {
	DataCenters []wireDataCenter `json:"dataCenters"`
}

type wireListNetworkVolumes struct {
	NetworkVolumes []wireNetworkVolume `json:"networkVolumes"`
}

type wireCreateNetworkVolume struct {
	Name       string `json:"name"`
	Size       int    `json:"size"`
	DataCenter string `json:"dataCenter"`
	Type       string `json:"type"`
}

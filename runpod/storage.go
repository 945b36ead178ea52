package runpod

// StoppedVolumeUSDPerGBMonth is what a stopped pod's pod volume costs, in
// USD per GB and month. The API gives no storage price: this is Runpod's
// documented one for the volume disk of a stopped pod ($0.20/GB/month,
// runpod.io/pricing, "Pod Pricing: Storage"; $0.10 while it runs), an
// estimate that Runpod may change.
const StoppedVolumeUSDPerGBMonth = 0.20

// NetworkVolumeUSDPerGBMonth is what a network volume costs, in USD per GB
// and month, whether a pod mounts it or not: Runpod's documented price
// for the first TB ($0.07/GB/month, runpod.io/pricing, "Storage"; $0.05
// beyond), an estimate that Runpod may change.
const NetworkVolumeUSDPerGBMonth = 0.07

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The part of NVIDIA's NVML C API that llmtune calls, declared here from NVIDIA's public NVML API
 * Reference Guide (docs.nvidia.com/deploy/nvml-api/) so that llmtune builds without the NVIDIA
 * driver or CUDA toolkit: the library is opened at run time (nvml-live.c). Only the entry points,
 * types and constants below are used; each function is looked up by its versioned symbol name
 * (nvmlInit_v2, nvmlDeviceGetHandleByIndex_v2, nvmlDeviceGetPciInfo_v3, ...), which is what
 * nvml.h maps the plain names to. The test double (tests/nvml-double) implements the same.
 */
#pragma once

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef int nvmlEnableState_t; /* NVML_FEATURE_DISABLED 0, NVML_FEATURE_ENABLED 1 */

/* nvmlReturn_t values llmtune tells apart; nvmlErrorString() words the rest. */
#define NVML_SUCCESS 0
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_NO_PERMISSION 4
#define NVML_ERROR_NOT_FOUND 6
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_DRIVER_NOT_LOADED 9
#define NVML_ERROR_GPU_IS_LOST 15
#define NVML_ERROR_FUNCTION_NOT_FOUND 13

#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE 32
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE 16
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80
#define NVML_NVLINK_MAX_LINKS 18

/* nvmlDeviceGetPciInfo_v3 fills this layout (nvmlPciInfo_t). */
typedef struct {
        char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
        unsigned int domain;
        unsigned int bus;
        unsigned int device;
        unsigned int pciDeviceId;
        unsigned int pciSubSystemId;
        char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
} nvmlPciInfo_t;

/* nvmlDeviceGetMemoryInfo fills this (nvmlMemory_t, bytes). */
typedef struct {
        unsigned long long total, free, used;
} nvmlMemory_t;

/* nvmlDeviceGetComputeRunningProcesses_v3 / GetGraphicsRunningProcesses_v3 fill these (nvmlProcessInfo_t;
 * the v2 entry points use the same layout). */
typedef struct {
        unsigned int pid;
        unsigned long long usedGpuMemory;
        unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;

/* nvmlMemoryErrorType_t, nvmlEccCounterType_t */
#define NVML_MEMORY_ERROR_TYPE_CORRECTED 0
#define NVML_MEMORY_ERROR_TYPE_UNCORRECTED 1
#define NVML_VOLATILE_ECC 0
#define NVML_AGGREGATE_ECC 1

/* nvmlPageRetirementCause_t */
#define NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS 0
#define NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR 1

/* nvmlComputeMode_t */
#define NVML_COMPUTEMODE_DEFAULT 0
#define NVML_COMPUTEMODE_EXCLUSIVE_THREAD 1
#define NVML_COMPUTEMODE_PROHIBITED 2
#define NVML_COMPUTEMODE_EXCLUSIVE_PROCESS 3

/* nvmlClockType_t */
#define NVML_CLOCK_GRAPHICS 0
#define NVML_CLOCK_MEM 2

/* nvmlNvLinkErrorCounter_t */
#define NVML_NVLINK_ERROR_DL_REPLAY 0
#define NVML_NVLINK_ERROR_DL_RECOVERY 1
#define NVML_NVLINK_ERROR_DL_CRC_FLIT 2
#define NVML_NVLINK_ERROR_DL_CRC_DATA 3

/* Function pointer types, one per entry point, named after the symbol. */
typedef nvmlReturn_t (*nvmlInit_v2_fn)(void);
typedef nvmlReturn_t (*nvmlShutdown_fn)(void);
typedef const char *(*nvmlErrorString_fn)(nvmlReturn_t);
typedef nvmlReturn_t (*nvmlSystemGetDriverVersion_fn)(char *, unsigned int);
typedef nvmlReturn_t (*nvmlDeviceGetCount_v2_fn)(unsigned int *);
typedef nvmlReturn_t (*nvmlDeviceGetHandleByIndex_v2_fn)(unsigned int, nvmlDevice_t *);
typedef nvmlReturn_t (*nvmlDeviceGetPciInfo_v3_fn)(nvmlDevice_t, nvmlPciInfo_t *);
typedef nvmlReturn_t (*nvmlDeviceGetString_fn)(nvmlDevice_t, char *, unsigned int); /* GetUUID, GetName */
typedef nvmlReturn_t (*nvmlDeviceGetEnable_fn)(nvmlDevice_t, nvmlEnableState_t *); /* GetPersistenceMode, GetRetiredPagesPendingStatus */
typedef nvmlReturn_t (*nvmlDeviceGetEccMode_fn)(nvmlDevice_t, nvmlEnableState_t *, nvmlEnableState_t *);
typedef nvmlReturn_t (*nvmlDeviceGetTotalEccErrors_fn)(nvmlDevice_t, int, int, unsigned long long *);
typedef nvmlReturn_t (*nvmlDeviceGetRemappedRows_fn)(nvmlDevice_t, unsigned int *, unsigned int *, unsigned int *,
                                                     unsigned int *);
typedef nvmlReturn_t (*nvmlDeviceGetRetiredPages_fn)(nvmlDevice_t, int, unsigned int *, unsigned long long *);
typedef nvmlReturn_t (*nvmlDeviceGetMigMode_fn)(nvmlDevice_t, unsigned int *, unsigned int *);
typedef nvmlReturn_t (*nvmlDeviceGetComputeMode_fn)(nvmlDevice_t, int *);
typedef nvmlReturn_t (*nvmlDeviceGetU64_fn)(nvmlDevice_t, unsigned long long *); /* GetCurrentClocksEventReasons */
typedef nvmlReturn_t (*nvmlDeviceGetUint_fn)(nvmlDevice_t, unsigned int *); /* power limits, PCIe gen/width, replay */
/* GetApplicationsClock, GetDefaultApplicationsClock, GetMaxClockInfo: (device, nvmlClockType_t, MHz) */
typedef nvmlReturn_t (*nvmlDeviceGetClockOfType_fn)(nvmlDevice_t, int, unsigned int *);
typedef nvmlReturn_t (*nvmlDeviceGetPowerManagementLimitConstraints_fn)(nvmlDevice_t, unsigned int *, unsigned int *);
typedef nvmlReturn_t (*nvmlDeviceGetNvLinkState_fn)(nvmlDevice_t, unsigned int, nvmlEnableState_t *);
typedef nvmlReturn_t (*nvmlDeviceGetMemoryInfo_fn)(nvmlDevice_t, nvmlMemory_t *);
typedef nvmlReturn_t (*nvmlDeviceGetProcesses_fn)(nvmlDevice_t, unsigned int *, nvmlProcessInfo_t *);
typedef nvmlReturn_t (*nvmlDeviceGetNvLinkErrorCounter_fn)(nvmlDevice_t, unsigned int, int, unsigned long long *);

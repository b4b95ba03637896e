/**
 * @file ksnap.h
 * @brief The umbrella header of libksnap: include this one.
 */
#ifndef KSNAP_KSNAP_H
#define KSNAP_KSNAP_H

#include "ksnap/version.h"
#include "ksnap/error.h"
#include "ksnap/log.h"
#include "ksnap/buf.h"
#include "ksnap/conf.h"
#include "ksnap/records.h"
#include "ksnap/job.h"
#include "ksnap/operator.h"
#include "ksnap/state.h"
#include "ksnap/context.h"
#include "ksnap/window.h"
#include "ksnap/run.h"

#endif /* KSNAP_KSNAP_H */

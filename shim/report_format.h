/* report_format.h: the contract between the shim (writer) and the gpuleak
 * command (reader). docs/report-format.md describes every field. */
#ifndef GPULEAK_REPORT_FORMAT_H
#define GPULEAK_REPORT_FORMAT_H

#define REPORT_FORMAT_NAME "gpuleak-report"
#define REPORT_FORMAT_VERSION 2
#define GPULEAK_VERSION "0.1.0"

#endif

import type { Migration } from 'kysely'
import * as placemarks from './001_placemarks.ts'
import * as auth from './002_auth.ts'
import * as activity from './003_activity.ts'
import * as activityRank from './004_activity_rank.ts'
import * as usersUpdated from './005_users_updated.ts'
import * as authRetention from './006_auth_retention.ts'
import * as changeBus from './007_change_bus.ts'
import * as activityEvents from './008_activity_events.ts'
import * as apiKeys from './009_api_keys.ts'
import * as activityRollups from './010_activity_rollups.ts'
import * as audit from './011_audit.ts'
import * as placemarkSearch from './012_placemark_search.ts'
import * as activityDailyCovering from './013_activity_daily_covering.ts'
import * as placemarkTime from './014_placemark_time.ts'
import * as placemarkBoxAnswer from './015_placemark_box_answer.ts'
import * as activityNewcomers from './016_activity_newcomers.ts'
import * as placemarkShapeTest from './017_placemark_shape_test.ts'
import * as placemarkBoxFunction from './018_placemark_box_function.ts'
import * as placemarkBoxLazyTest from './019_placemark_box_lazy_test.ts'
import * as placemarkBoxIndexOnly from './020_placemark_box_index_only.ts'
import * as activityOverview from './021_activity_overview.ts'
import * as placemarkTimes from './022_placemark_times.ts'
import * as datasetIcons from './023_dataset_icons.ts'
import * as activityDayEdges from './024_activity_day_edges.ts'
import * as tileCells from './025_tile_cells.ts'
import * as tileCellColours from './026_tile_cell_colours.ts'
import * as datasetFactsMigration from './027_dataset_facts.ts'

// Listed statically so the migrator needs no file-system discovery; names sort in apply order.
export const migrations: Record<string, Migration> = {
  '001_placemarks': placemarks,
  '002_auth': auth,
  '003_activity': activity,
  '004_activity_rank': activityRank,
  '005_users_updated': usersUpdated,
  '006_auth_retention': authRetention,
  '007_change_bus': changeBus,
  '008_activity_events': activityEvents,
  '009_api_keys': apiKeys,
  '010_activity_rollups': activityRollups,
  '011_audit': audit,
  '012_placemark_search': placemarkSearch,
  '013_activity_daily_covering': activityDailyCovering,
  '014_placemark_time': placemarkTime,
  '015_placemark_box_answer': placemarkBoxAnswer,
  '016_activity_newcomers': activityNewcomers,
  '017_placemark_shape_test': placemarkShapeTest,
  '018_placemark_box_function': placemarkBoxFunction,
  '019_placemark_box_lazy_test': placemarkBoxLazyTest,
  '020_placemark_box_index_only': placemarkBoxIndexOnly,
  '021_activity_overview': activityOverview,
  '022_placemark_times': placemarkTimes,
  '023_dataset_icons': datasetIcons,
  '024_activity_day_edges': activityDayEdges,
  '025_tile_cells': tileCells,
  '026_tile_cell_colours': tileCellColours,
  '027_dataset_facts': datasetFactsMigration
}

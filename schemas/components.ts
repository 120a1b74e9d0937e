import type { TSchema } from '@sinclair/typebox'
import { ErrorResponse } from './common.ts'
import { PlacemarkDetail, PlacemarkSummary, TimelineEvent } from './placemarks.ts'
import { Guild, HistoryEvent, Me, Session, User } from './auth.ts'

/**
 * The shapes several answers share, each with an `$id`: registered once with app.addSchema (see
 * plugins/external/swagger.ts), referred to with ref() in route schemas, and listed by that name in the
 * OpenAPI document's components.schemas.
 */
export const sharedSchemas: TSchema[] = [ErrorResponse, PlacemarkSummary, PlacemarkDetail, TimelineEvent, User, Guild, Me, Session, HistoryEvent]

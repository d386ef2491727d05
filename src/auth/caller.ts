/** Who a service call acts for: the signed-in user and their organisation, which owns what the call touches. */
export interface Caller {
  userId: string
  orgId: string
}

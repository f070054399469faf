package main

import (
	"context"
	"net/http"
	"net/url"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// The waiting room's calls over gRPC and HTTP/JSON (api).

func (g *grpcAPI) SetWaitingRoom(ctx context.Context, req *ledgerpb.SetWaitingRoomRequest) (*ledgerpb.WaitingRoomStatus, error) {
	r, err := g.w.SetWaitingRoom(ctx, req)
	return r, grpcErr(err)
}

func (g *grpcAPI) GetWaitingRoom(ctx context.Context, show string) (*ledgerpb.WaitingRoomStatus, error) {
	r, err := g.w.GetWaitingRoom(ctx, &ledgerpb.GetWaitingRoomRequest{ShowId: show})
	return r, grpcErr(err)
}

func (g *grpcAPI) JoinWaitingRoom(ctx context.Context, req *ledgerpb.JoinWaitingRoomRequest) (*ledgerpb.WaitingRoomEntry, error) {
	r, err := g.w.JoinWaitingRoom(ctx, req)
	return r, grpcErr(err)
}

func (g *grpcAPI) GetWaitingRoomEntry(ctx context.Context, req *ledgerpb.GetWaitingRoomEntryRequest) (*ledgerpb.WaitingRoomEntry, error) {
	r, err := g.w.GetWaitingRoomEntry(ctx, req)
	return r, grpcErr(err)
}

func (h *httpAPI) SetWaitingRoom(ctx context.Context, req *ledgerpb.SetWaitingRoomRequest) (*ledgerpb.WaitingRoomStatus, error) {
	r := &ledgerpb.WaitingRoomStatus{}
	return r, h.do(ctx, http.MethodPost, "/v1/admin/shows/"+url.PathEscape(req.ShowId)+"/waiting_room", req, r)
}

func (h *httpAPI) GetWaitingRoom(ctx context.Context, show string) (*ledgerpb.WaitingRoomStatus, error) {
	r := &ledgerpb.WaitingRoomStatus{}
	return r, h.do(ctx, http.MethodGet, "/v1/shows/"+url.PathEscape(show)+"/waiting_room", nil, r)
}

func (h *httpAPI) JoinWaitingRoom(ctx context.Context, req *ledgerpb.JoinWaitingRoomRequest) (*ledgerpb.WaitingRoomEntry, error) {
	r := &ledgerpb.WaitingRoomEntry{}
	return r, h.do(ctx, http.MethodPost, "/v1/shows/"+url.PathEscape(req.ShowId)+"/waiting_room:join", req, r)
}

func (h *httpAPI) GetWaitingRoomEntry(ctx context.Context, req *ledgerpb.GetWaitingRoomEntryRequest) (*ledgerpb.WaitingRoomEntry, error) {
	r := &ledgerpb.WaitingRoomEntry{}
	return r, h.do(ctx, http.MethodGet, "/v1/shows/"+url.PathEscape(req.ShowId)+"/waiting_room/entries/"+
		url.PathEscape(req.EntryId)+"?entry_token="+url.QueryEscape(req.EntryToken), nil, r)
}
